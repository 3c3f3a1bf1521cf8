"""PostgreSQL table -> Debezium's PostgreSQL source (pgoutput) -> CDC topic -> Debezium's
JDBC sink (upsert, deletes) -> another PostgreSQL table, on the lab's Kafka Connect worker,
the worker SIGKILLed between two batches of changes and restarted while the second is
written. Debezium's events, read by ``reconcile --envelope debezium`` as the connector
wrote them, are compared with the sink table and with the source table itself; the counts
are checked against SQL truth computed here, and a sink row deleted by hand is found."""

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
