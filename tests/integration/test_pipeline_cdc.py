"""PostgreSQL table -> Debezium's PostgreSQL source (pgoutput) -> CDC topic -> Debezium's
JDBC sink (upsert, deletes) -> another PostgreSQL table, on the lab's Kafka Connect worker,
the worker SIGKILLed between two batches of changes and restarted while the second is
written. Debezium's events, read by ``reconcile --envelope debezium`` as the connector
wrote them, are compared with the sink table and with the source table itself; the counts
are checked against SQL truth computed here, and a sink row deleted by hand is found.

Then Debezium's source with its default settings (``decimal.handling.mode=precise``,
``time.precision.mode=adaptive``; JSON with schemas) on a table of every common column type:
the events equal the source table with nothing declared, and a copy with one cell of each
type changed by its smallest step is found cell by cell; then the same in Avro, written by
Apicurio Registry's converter to the suite's registry."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kaudit.lab.connect import CONNECT_ID, rest
from kaudit.lab.state import LabNode
from tests.conftest import Lab
from tests.connect import (
    connect_worker,
    delete_connector,
    jdbc_sink,
    start_connector,
    wait_until,
)
from tests.integration.test_lab import admin
from tests.integration.test_pipeline_jdbc import sink_args
from tests.integration.test_reconcile import reconcile
from tests.pg import Postgres
from tests.registry import SchemaRegistry

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

ROWS = 120
DELETED_BY_HAND = 33
COLUMNS = "id, status, amount"


@pytest.fixture(scope="module")
def worker(lab: Lab) -> Iterator[LabNode]:
    # The source's offsets are flushed every second, as its restart resumes from them.
    with connect_worker(lab, {"offset.flush.interval.ms": "1000"}) as node:
        yield node


def streaming_offset_flushed(worker: LabNode, name: str) -> bool:
    """The source's committed offset is a streaming one (an LSN, not the snapshot's): a
    restart resumes streaming from it instead of taking the snapshot again."""
    found = rest(worker, "GET", f"/connectors/{name}/offsets").get("offsets", [])
    return any(o["offset"].get("lsn") and not o["offset"].get("snapshot") for o in found)


def differing(postgres: Postgres, a: str, b: str) -> int:
    """Rows of ``a`` that ``b`` lacks, by SQL."""
    try:
        return int(postgres.psql(f"select count(*) from (select {COLUMNS} from {a} except "
                                 f"select {COLUMNS} from {b}) d"))
    except RuntimeError:  # the sink has not created its table yet
        return -1


def in_step(postgres: Postgres, source: str, sink: str) -> bool:
    return differing(postgres, source, sink) == 0 and differing(postgres, sink, source) == 0


def changes(postgres: Postgres, table: str, batch: int) -> None:
    """Updates, deletes and inserts: one transaction each, as an application makes them."""
    base = batch * 1000
    postgres.psql(f"update {table} set status = 'paid', amount = amount + {batch} "
                  f"where id % 7 = {batch}")
    postgres.psql(f"delete from {table} where id % 11 = {batch}")
    postgres.psql(f"insert into {table} select {base} + g, 'new', g * 2.5 "
                  "from generate_series(1, 15) g")


def test_a_cdc_pipeline_with_a_killed_worker_is_reconciled_with_both_tables(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    source, sink, prefix = f"cdc_src_{suffix}", f"cdc_dst_{suffix}", f"cdc{suffix}"
    topic = f"{prefix}.public.{source}"
    postgres.psql(f"create table {source} (id bigint primary key, status text not null, "
                  "amount double precision not null)")
    postgres.psql(f"insert into {source} select g, 'new', g * 1.5 "
                  f"from generate_series(0, {ROWS - 1}) g")
    names = [f"pg-{suffix}", f"jdbc-{suffix}"]
    start_connector(worker, names[0], {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "database.hostname": "127.0.0.1",
        "database.port": str(postgres.port),
        "database.user": postgres.user,
        "database.password": postgres.password,
        "database.dbname": postgres.database,
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"slot_{suffix}",
        "publication.name": f"pub_{suffix}",
        "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{source}",
        "decimal.handling.mode": "double",
        "topic.creation.default.replication.factor": "3",
        "topic.creation.default.partitions": "1",
    })
    start_connector(worker, names[1], jdbc_sink(
        postgres, topic, sink, **{"insert.mode": "upsert", "primary.key.mode": "record_key",
                                  "primary.key.fields": "id", "delete.enabled": "true"}))
    try:
        wait_until(lambda: in_step(postgres, source, sink), 180, "the snapshot in the sink")
        changes(postgres, source, 1)
        wait_until(lambda: in_step(postgres, source, sink), 180, "the first changes in the sink")
        wait_until(lambda: streaming_offset_flushed(worker, names[0]), 60,
                   "the source's streaming offset committed")
        assert lab.kaudit("kill", str(CONNECT_ID), "--signal", "KILL").code == 0
        changes(postgres, source, 2)  # while the worker is down
        restarted = lab.kaudit("start", str(CONNECT_ID))
        assert restarted.code == 0, restarted.stderr
        try:
            wait_until(lambda: in_step(postgres, source, sink), 180,
                       "the sink in step with the source after the restart")
        except AssertionError:
            raise AssertionError(postgres.psql(
                f"(select 'src', {COLUMNS} from {source} except select 'src', {COLUMNS} "
                f"from {sink}) union all (select 'dst', {COLUMNS} from {sink} except "
                f"select 'dst', {COLUMNS} from {source}) limit 10")) from None
        for name in names:
            delete_connector(worker, name)
        postgres.psql(f"delete from {sink} where id = {DELETED_BY_HAND}")
        truth = (differing(postgres, source, sink), differing(postgres, sink, source))
        assert truth == (1, 0)

        common = ["--topic", topic, "--envelope", "debezium", "--key", "id",
                  "--compare", "status,amount", "--samples", "10"]
        code, doc, stderr = reconcile(lab, *common, *sink_args(postgres, sink, tmp_path))
        assert code == 1, stderr
        counts = doc["counts"]
        assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["mismatched"],
                counts["duplicated_in_sink"], counts["undecodable"]) == (*truth, 0, 0, 0), \
            json.dumps([counts, doc["samples"]])
        [missing] = doc["samples"]["missing_in_sink"]
        assert int(missing["key"]) == DELETED_BY_HAND
        assert missing["event"]["op"] in ("r", "c", "u"), missing  # the event behind the row
        # The source table is the topic's truth too: the events leave exactly its rows.
        code, doc, stderr = reconcile(lab, *common, *sink_args(postgres, source, tmp_path))
        assert code == 0, json.dumps([doc.get("counts"), stderr])
        assert doc["counts"]["sink_rows"] == int(postgres.psql(f"select count(*) from {source}"))
    finally:
        postgres.psql(f"select pg_drop_replication_slot('slot_{suffix}') from pg_replication_slots "
                      f"where slot_name = 'slot_{suffix}' and not active")
        admin(lab).delete_topics([topic])


TYPED = ("amount numeric(12,2), ratio double precision, created timestamp, paid timestamptz, "
         "day date, opens time, ref uuid, attrs jsonb, note text, active boolean, "
         "exact numeric")
TYPED_COLUMNS = [c.split()[0] for c in TYPED.split(", ")]
# Rows 1-30 of every kind, row 0 at the edges (before 1970, a leap day, midnight, a
# negative amount, a long above 2^53 in JSON) and row 31 all null.
TYPED_ROWS = (
    "select g, (g * 1.25 - 0.01)::numeric(12,2), g / 3.0, "
    "timestamp '2025-11-28 08:00:00.046993' + g * interval '1 day 1 microsecond', "
    "timestamptz '2025-11-28 08:00:00.5+02' + g * interval '61 minutes', "
    "date '2024-02-28' + g, time '08:00:00.123456' + g * interval '1001 milliseconds', "
    "md5(g::text)::uuid, jsonb_build_object('n', g, 'tags', jsonb_build_array('a', g * 2.5)), "
    "'note ' || g, g % 2 = 0, g * 1.005 - 12.0000000000000000000000000001 "
    "from generate_series(1, 30) g")
EDGE_ROW = ("(0, -0.01, -1e-300, '1969-12-31 23:59:59.999999', '1969-12-31 23:59:59.999999Z', "
            "'1960-02-29', '00:00:00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', "
            "'{\"big\": 9007199254740993, \"z\": {\"b\": [], \"a\": null}}', '', false, "
            "-1234567890123456789012345678.9012345678)")
# column -> (row, the SQL that changes it by its smallest step) in the copy.
CHANGES = {
    "amount": (1, "amount + 0.01"), "ratio": (2, "ratio + 1e-15"),
    "created": (3, "created + interval '1 microsecond'"),
    "paid": (4, "paid + interval '1 microsecond'"), "day": (5, "day + 1"),
    "opens": (6, "opens + interval '1 microsecond'"),
    "ref": (8, "overlay(ref::text placing 'f' from 36)::uuid"),
    "attrs": (9, "jsonb_set(attrs, '{n}', to_jsonb(10))"),
    "note": (10, "replace(note, ' ', chr(160))"), "active": (12, "not active"),
    "exact": (13, "exact + 0.0000000000000000000000000001"),
}


def end_offsets(lab: Lab, topic: str) -> int:
    """Records in the topic's one partition (0 before it exists)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": "kaudit-test-ends"})
    try:
        if topic not in consumer.list_topics(timeout=10).topics:
            return 0
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_debezium_defaults_every_type_equal_to_the_table_and_each_cell_changed_found(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    typed_pipeline(lab, worker, postgres, tmp_path, {}, [])


def test_debezium_defaults_in_avro_through_apicurios_converter_equal_and_each_change_found(
        lab: Lab, worker: LabNode, postgres: Postgres, schema_registry: SchemaRegistry,
        tmp_path: Path) -> None:
    """The same pipeline with keys and values in Avro, written by Apicurio's converter in
    Confluent's wire format (a 4-byte content id) and registered under TOPIC-key and
    TOPIC-value: the types come from the schemas Debezium's events carry."""
    registry, converters = schema_registry, {}
    for side in ("key", "value"):
        converters |= {f"{side}.converter": "io.apicurio.registry.utils.converter.AvroConverter",
                       f"{side}.converter.apicurio.registry.url": registry.v2_url,
                       f"{side}.converter.apicurio.registry.auto-register": "true",
                       f"{side}.converter.apicurio.registry.headers.enabled": "false",
                       f"{side}.converter.apicurio.registry.as-confluent": "true",
                       f"{side}.converter.apicurio.registry.use-id": "contentId"}
    typed_pipeline(lab, worker, postgres, tmp_path, converters,
                   ["--value-format", "avro", "--key-format", "avro",
                    "--schema-registry", registry.url])


def typed_pipeline(lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path,
                   converters: dict[str, str], decoding: list[str]) -> None:
    """Debezium's source with its defaults (and ``converters``) on a table of every common
    type, read with ``decoding``: equal to the table, and each changed cell found."""
    suffix = uuid.uuid4().hex[:6]
    source, prefix = f"typed_{suffix}", f"typed{suffix}"
    topic = f"{prefix}.public.{source}"
    postgres.psql(f"create table {source} (id bigint primary key, {TYPED})")
    postgres.psql(f"insert into {source} {TYPED_ROWS}")
    postgres.psql(f"insert into {source} values {EDGE_ROW}, (31{', null' * len(TYPED_COLUMNS)})")
    name = f"pg-typed-{suffix}"
    start_connector(worker, name, {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1", "database.hostname": "127.0.0.1",
        "database.port": str(postgres.port), "database.user": postgres.user,
        "database.password": postgres.password, "database.dbname": postgres.database,
        "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": f"slot_{suffix}",
        "publication.name": f"pub_{suffix}", "publication.autocreate.mode": "filtered",
        "table.include.list": f"public.{source}",
        "topic.creation.default.replication.factor": "3",
        "topic.creation.default.partitions": "1",
    } | converters)
    try:
        wait_until(lambda: end_offsets(lab, topic) >= 32, 120, "the snapshot's 32 events")
        # Changes after the snapshot: updates, deletes (an event and a tombstone each),
        # inserts; each a transaction of its own.
        postgres.psql(f"update {source} set amount = amount + 0.01, "
                      "attrs = attrs || '{\"u\": true}' where id % 5 = 0 and id > 0")
        postgres.psql(f"delete from {source} where id in (7, 14)")
        postgres.psql(f"insert into {source} {TYPED_ROWS.replace('select g,', 'select g + 100,')}"
                      .replace("generate_series(1, 30)", "generate_series(1, 2)"))
        wait_until(lambda: end_offsets(lab, topic) >= 32 + 6 + 4 + 2, 120, "the changes' events")
        delete_connector(worker, name)
        common = ["--topic", topic, "--envelope", "debezium", "--key", "id",
                  "--compare", ",".join(TYPED_COLUMNS), "--samples", "20", *decoding]
        code, doc, stderr = reconcile(lab, *common, *sink_args(postgres, source, tmp_path))
        assert code == 0, json.dumps([doc.get("counts"), doc.get("samples"), stderr])
        assert doc["counts"]["sink_rows"] == 32 - 2 + 2
        assert {f["column"]: f["compared_as"] for f in doc["fields"]} == {
            "amount": "decimal(12,2)", "ratio": "float", "created": "timestamp",
            "paid": "timestamp", "day": "date", "opens": "time", "ref": "uuid",
            "attrs": "json", "note": "text", "active": "boolean", "exact": "wide decimal"}
        copy = f"typed_copy_{suffix}"
        postgres.psql(f"create table {copy} as select * from {source}")
        for column, (row, change) in CHANGES.items():
            postgres.psql(f"update {copy} set {column} = {change} where id = {row}")
        code, doc, stderr = reconcile(lab, *common, *sink_args(postgres, copy, tmp_path))
        assert code == 1, stderr
        counts = doc["counts"]
        assert (counts["mismatched"], counts["missing_in_sink"], counts["extra_in_sink"],
                counts["undecodable"]) == (len(CHANGES), 0, 0, 0), json.dumps(doc["samples"])
        assert {s["column"]: int(s["key"]) for s in doc["samples"]["mismatched"]} == {
            c: row for c, (row, _) in CHANGES.items()}
    finally:
        postgres.psql(f"select pg_drop_replication_slot('slot_{suffix}') from pg_replication_slots "
                      f"where slot_name = 'slot_{suffix}' and not active")
        admin(lab).delete_topics([topic])
