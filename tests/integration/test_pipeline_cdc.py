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
Apicurio Registry's converter to the suite's registry.

Then why a row is missing, from the pipeline's own records (reconcile ``--connector``, on
this module's worker): Debezium's JDBC sink driven to each failure a real sink has. Records
its converter cannot read are dead-lettered (``errors.tolerance=all``, a dead letter queue
with context headers), a record the table refuses fails the task, a paused connector leaves
records undelivered, and a group moved past records by hand skips them. Each missing record
is given exactly its cause."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.connect import CONNECT_ID, rest
from kaudit.lab.state import LabNode
from tests.conftest import Lab
from tests.connect import (
    connect_worker,
    delete_connector,
    jdbc_sink,
    pipeline_args,
    start_connector,
    wait_until,
)
from tests.integration.test_lab import admin
from tests.integration.test_pipeline_jdbc import produce, rows_in, sink_args, value
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


UNREADABLE = {7, 21}
"""Records written without the JSON converter's schema/payload wrapper: kaudit reads them
(``--envelope connect`` takes a bare payload as it is), the sink's converter cannot
(``schemas.enable=true``), and Connect dead-letters them."""
FIRST, LAST = 30, 40
"""Records 0..FIRST-1 arrive first; then FIRST..LAST-1, whose first breaks the table's
check: the task fails on it, and nothing from it on is written."""


UPSERT_CONNECT_JSON = {
    "insert.mode": "upsert", "primary.key.mode": "record_value", "primary.key.fields": "id",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true"}
"""The sink's settings: a row per id, from Kafka Connect's JSON with its schema."""


def produce_values(lab: Lab, topic: str, values: dict[int, str]) -> None:
    """These values, keyed by their ids, in this order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i, text in values.items():
        producer.produce(topic, key=str(i), value=text)
    assert producer.flush(60) == 0


def committed(lab: Lab, group: str, topic: str) -> int | None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    [future] = admin(lab).list_consumer_group_offsets(request).values()
    [tp] = future.result(30).topic_partitions
    return tp.offset if tp.offset >= 0 else None


def state(node: LabNode, name: str) -> dict[str, Any]:
    status = rest(node, "GET", f"/connectors/{name}/status")
    return {"connector": status["connector"]["state"],
            "tasks": [t["state"] for t in status.get("tasks", [])]}


def explained(lab: Lab, node: LabNode, name: str, topic: str, postgres: Postgres,
              table: str, tmp_path: Path, *more: str) -> tuple[int, dict[str, Any], str]:
    return reconcile(
        lab, "--topic", topic, "--envelope", "connect", "--key", "id",
        "--compare", "status,amount", "--samples", "20", *more,
        *pipeline_args(node, name), *sink_args(postgres, table, tmp_path))


def test_unreadable_records_are_dead_lettered_and_a_refused_one_fails_the_task(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"dlq-{suffix}", f"dlq_{suffix}", f"dlq-{suffix}"
    dlq = f"{topic}-dlq"
    postgres.psql(f"create table {table} (id bigint primary key check (id <> {FIRST}), "
                  "status text, amount double precision)")
    produce(lab, topic, range(0))  # the topic, empty
    produce_values(lab, topic, {i: json.dumps(json.loads(value(i))["payload"])
                                if i in UNREADABLE else value(i) for i in range(FIRST)})
    start_connector(worker, name, jdbc_sink(
        postgres, topic, table, **UPSERT_CONNECT_JSON, **{
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": dlq,
            "errors.deadletterqueue.topic.replication.factor": "3",
            "errors.deadletterqueue.context.headers.enable": "true"}))
    try:
        wait_until(lambda: committed(lab, f"connect-{name}", topic) == FIRST, 120,
                   f"{name} committed past record {FIRST - 1}")
        assert rows_in(postgres, table) == FIRST - len(UNREADABLE)
        produce(lab, topic, range(FIRST, LAST))
        wait_until(lambda: state(worker, name)["tasks"] == ["FAILED"], 120,
                   f"{name}'s task failed on record {FIRST}")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path)
        assert code == 1, stderr
        missing = set(UNREADABLE) | set(range(FIRST, LAST))
        assert doc["counts"]["missing_in_sink"] == len(missing), doc["counts"]
        assert doc["causes"]["missing_in_sink"] == {
            "not_yet_delivered": LAST - FIRST, "dead_lettered": len(UNREADABLE)}
        samples = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(samples) == missing
        for i in UNREADABLE:
            assert samples[i]["name"] == "dead_lettered"
            assert samples[i]["exception"] == "org.apache.kafka.connect.errors.DataException"
        for i in range(FIRST, LAST):
            assert samples[i]["name"] == "not_yet_delivered"
            assert (samples[i]["committed"], samples[i]["lag"]) == (FIRST, LAST - FIRST)
            assert samples[i]["tasks"][0]["state"] == "FAILED"
            assert samples[i]["tasks"][0]["trace"], samples[i]
            assert "task 0 FAILED" in samples[i]["evidence"]
        pipe = doc["pipeline"]
        assert (pipe["dead_letter_topic"], pipe["dead_letters"], pipe["errors_tolerance"],
                pipe["unread"]) == (dlq, len(UNREADABLE), "all", {})
        assert pipe["settings"] == {"insert.mode": "upsert",
                                    "errors.deadletterqueue.context.headers.enable": "true"}
    finally:
        delete_connector(worker, name)
        admin(lab).delete_topics([topic, dlq])


def test_a_paused_connector_leaves_records_undelivered_and_a_group_moved_on_skips_them(
        lab: Lab, worker: LabNode, postgres: Postgres, tmp_path: Path) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    suffix = uuid.uuid4().hex[:6]
    topic, table, name = f"paused-{suffix}", f"paused_{suffix}", f"paused-{suffix}"
    group = f"connect-{name}"
    produce(lab, topic, range(20))
    start_connector(worker, name, jdbc_sink(postgres, topic, table, **UPSERT_CONNECT_JSON))
    try:
        wait_until(lambda: committed(lab, group, topic) == 20, 120, f"{name} at offset 20")
        rest(worker, "PUT", f"/connectors/{name}/pause")
        wait_until(lambda: state(worker, name) == {"connector": "PAUSED", "tasks": ["PAUSED"]},
                   60, f"{name} paused")
        produce(lab, topic, range(20, 26))
        update = dict(json.loads(value(5)), payload={**json.loads(value(5))["payload"],
                                                     "status": "refunded"})
        produce_values(lab, topic, {5: json.dumps(update)})  # offset 26
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert code == 1, stderr
        # The sink is behind, not wrong: key 5's row is its record before the update.
        assert doc["causes"] == {"missing_in_sink": {"not_yet_delivered": 6},
                                 "mismatched": {"not_yet_delivered": 1}}, doc["counts"]
        [changed] = doc["samples"]["mismatched"]
        assert (changed["key"], changed["column"], changed["cause"]["lag"]) == \
            ("5", "status", 7)
        samples = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(samples) == set(range(20, 26))
        assert {(c["committed"], c["lag"]) for c in samples.values()} == {(20, 7)}
        assert all("task 0 PAUSED" in c["evidence"] for c in samples.values())

        rest(worker, "PUT", f"/connectors/{name}/resume")
        wait_until(lambda: committed(lab, group, topic) == 27, 120, f"{name} at offset 27")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert (code, doc["causes"]) == (0, {}), stderr

        # An operator's reset: the connector stopped, its group moved past six records.
        rest(worker, "PUT", f"/connectors/{name}/stop")
        wait_until(lambda: state(worker, name)["connector"] == "STOPPED", 60, f"{name} stopped")
        produce(lab, topic, range(27, 33))

        def move() -> bool:  # once the stopped task's consumer has left its group
            moved = admin(lab).alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 33)])])
            try:
                return all(future.result(30) is not None for future in moved.values())
            except Exception:
                return False
        wait_until(move, 60, f"{group} moved to offset 33")
        code, doc, stderr = explained(lab, worker, name, topic, postgres, table, tmp_path,
                                      "--mode", "upsert")
        assert code == 1, stderr
        assert doc["causes"] == {"missing_in_sink": {"skipped": 6}}
        skipped = {int(s["key"]): s["cause"] for s in doc["samples"]["missing_in_sink"]}
        assert set(skipped) == set(range(27, 33))
        assert all(c["committed"] == 33 and "the connector has no dead letter queue"
                   in c["evidence"] for c in skipped.values()), skipped
    finally:
        delete_connector(worker, name)
        admin(lab).delete_topics([topic])
