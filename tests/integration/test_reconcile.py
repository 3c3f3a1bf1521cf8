"""`kaudit reconcile` against a real lab topic, a Parquet sink and a real PostgreSQL table."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_in_process, run_kaudit
from tests.integration.test_lab import admin, delete_records_before, wait_until
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

N = 300
MISSING = {3, 150, 299}
DUPLICATED = {10, 11}
CHANGED = {20, 21}
EXTRA = {1000}
TOMBSTONED = {40, 41}


def create_topic(lab: Lab, prefix: str, partitions: int) -> str:
    """A new topic of RF 3, once every broker knows it."""
    from confluent_kafka.admin import NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin(lab).create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    wait_until(lambda: name in admin(lab).list_topics(timeout=5).topics, 30, "topic")
    return name


def placing(places: dict[int, tuple[int, int]]) -> Callable[[Any, Any], None]:
    """A delivery callback noting where each record (keyed by its number) was written."""
    def record(err: Any, msg: Any) -> None:
        assert err is None, err
        places[int(msg.key())] = (msg.partition(), msg.offset())
    return record


def amount(i: int) -> float:
    return round(i * 1.25, 2)


@pytest.fixture(scope="module")
def topic(lab: Lab) -> Iterator[dict[str, Any]]:
    """3 partitions of JSON orders keyed by id; a few tombstones; one aborted transaction."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    name = f"orders-{uuid.uuid4().hex[:6]}"
    admin(lab).create_topics([NewTopic(name, 3, 3)])[name].result(30)
    wait_until(lambda: name in admin(lab).list_topics(timeout=5).topics, 30, "topic")
    offsets: dict[int, tuple[int, int]] = {}

    def record(err: Any, msg: Any) -> None:
        assert err is None, err
        if msg.value() is not None:
            offsets[int(msg.key())] = (msg.partition(), msg.offset())

    plain = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(N):
        value = {"id": i, "status": "new", "amount": amount(i), "customer": {"id": i % 7}}
        plain.produce(name, key=str(i), value=json.dumps(value), on_delivery=record)
    for i in TOMBSTONED:  # deleted later: in upsert mode the row must be gone
        plain.produce(name, key=str(i), value=None)
    assert plain.flush(30) == 0, "records still unsent after 30 s"
    txn = Producer({"bootstrap.servers": lab.bootstrap, "transactional.id": f"t-{name}"})
    # The first transactional producer of a lab has __transaction_state created for it.
    txn.init_transactions(60)
    txn.begin_transaction()
    for i in range(5000, 5010):  # aborted: a read_committed reader never sees them
        txn.produce(name, key=str(i), value=json.dumps({"id": i, "status": "x", "amount": 0.0,
                                                        "customer": {"id": 0}}))
    assert txn.flush(30) == 0, "transactional records still unsent after 30 s"
    txn.abort_transaction(30)
    yield {"name": name, "offsets": offsets}
    admin(lab).delete_topics([name])


def sink_rows(drop_tombstoned: bool) -> list[dict[str, Any]]:
    """The sink as a consumer with known faults would have written it."""
    rows = []
    for i in range(N):
        if i in MISSING or (drop_tombstoned and i in TOMBSTONED):
            continue
        row = {"id": i, "status": "new", "amount": amount(i) + (1.0 if i in CHANGED else 0.0),
               "customer_id": i % 7}
        rows.append(row)
        if i in DUPLICATED:
            rows.append(dict(row))
    rows += [{"id": i, "status": "new", "amount": 1.0, "customer_id": 0} for i in EXTRA]
    return rows


def tree_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            digest.update(f.name.encode() + f.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def parquet_sink(tmp_path_factory: pytest.TempPathFactory, local_spark: Any) -> Path:
    """The sink's rows as one Parquet file, written by the suite's Spark session (a driver
    of its own would only cost a start)."""
    root = tmp_path_factory.mktemp("sink")
    src = root / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in sink_rows(drop_tombstoned=False)))
    dst = root / "orders.parquet"
    (local_spark.read.schema("id BIGINT, status STRING, amount DOUBLE, customer_id BIGINT")
     .json(str(src)).coalesce(1).write.parquet(str(dst)))
    return dst


def reconcile(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    """A reconcile run on the suite's local Spark (see ``local_spark``), in this process;
    with --master, as a separate process, as a user would run it."""
    argv = ("reconcile", "-b", lab.bootstrap, "--format", "json", *args)
    result = run_kaudit(*argv, timeout=600) if "--master" in args else run_in_process(*argv)
    return result.code, (json.loads(result.stdout) if result.stdout.strip() else {}), \
        result.stderr


def keys_of(doc: dict[str, Any], cls: str) -> set[int]:
    return {int(s["key"]) for s in doc["samples"].get(cls, [])}


# --shuffle hashes reads the suspects' records again, at their offsets, from the raw
# records before decoding them: every verdict must be the one a shuffle of values gives.
SHUFFLES = pytest.mark.parametrize("shuffle", ["values", "hashes"])


@SHUFFLES
def test_append_mode_against_parquet_names_every_injected_fault(
        lab: Lab, topic: dict[str, Any], parquet_sink: Path, tmp_path: Path,
        shuffle: str) -> None:
    before = tree_digest(parquet_sink)
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"parquet:{parquet_sink}", "--key", "id",
        "--compare", "status,amount,customer.id", "--samples", "10",
        "--output-dir", str(tmp_path / "out"), "--shuffle", shuffle)
    assert code == 1, stderr
    counts = doc["counts"]
    assert counts["topic_records"] == N  # tombstones and the aborted transaction left out
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["duplicated_in_sink"],
            counts["mismatched"]) == (len(MISSING), len(EXTRA), len(DUPLICATED), len(CHANGED))
    assert keys_of(doc, "missing_in_sink") == MISSING
    assert keys_of(doc, "extra_in_sink") == EXTRA
    assert keys_of(doc, "duplicated_in_sink") == DUPLICATED
    assert keys_of(doc, "mismatched") == CHANGED
    for sample in doc["samples"]["missing_in_sink"]:  # traced back to partition/offset
        assert (sample["partition"], sample["offset"]) == tuple(
            topic["offsets"][int(sample["key"])])
    assert {s["column"] for s in doc["samples"]["mismatched"]} == {"amount"}
    assert doc["source"]["isolation_level"] == "read_committed"
    assert doc["output_files"] and Path(doc["output_files"][0]).exists()
    assert tree_digest(parquet_sink) == before  # the sink is only read


@SHUFFLES
def test_upsert_mode_against_postgres_with_tombstones(lab: Lab, topic: dict[str, Any],
                                                      postgres: Postgres, tmp_path: Path,
                                                      shuffle: str) -> None:
    table = f"orders_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create table {table} (id bigint, status text, amount double precision, "
                  "customer_id bigint)")
    rows = sink_rows(drop_tombstoned=False)  # tombstoned keys still present: they are extra
    values = ",".join(f"({r['id']},'{r['status']}',{r['amount']},{r['customer_id']})"
                      for r in rows)
    postgres.psql(f"insert into {table} values {values}")
    before = postgres.psql(f"select md5(string_agg(t::text, ',' order by t::text)) from {table} t")
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"{postgres.jdbc_url}?table={table}",
        "--sink-option", f"user={postgres.user}",
        "--sink-option", f"password-file={password_file}", "--mode", "upsert", "--key", "id",
        "--compare", "status,amount", "--samples", "10", "--shuffle", shuffle)
    assert code == 1, stderr
    counts = doc["counts"]
    assert counts["missing_in_sink"] == len(MISSING)
    assert counts["extra_in_sink"] == len(EXTRA) + len(TOMBSTONED)
    assert counts["duplicated_in_sink"] == len(DUPLICATED)
    assert counts["mismatched"] == len(CHANGED)
    assert keys_of(doc, "extra_in_sink") == EXTRA | TOMBSTONED
    assert postgres.password not in json.dumps(doc) + stderr
    after = postgres.psql(f"select md5(string_agg(t::text, ',' order by t::text)) from {table} t")
    assert after == before  # the sink is only read


def test_a_sink_that_changes_before_the_second_read_is_exit_3_from_the_cli(
        lab: Lab, topic: dict[str, Any], postgres: Postgres, tmp_path: Path) -> None:
    # --shuffle hashes reads the sink twice: the second time for the suspects' values. The
    # sink here is a view that gains a second row of a mismatched key from its R-th query
    # on: a sequence, advanced once per query, counts them. A first run, where the row
    # never comes, finds R (the queries of one run); in the second the row comes with the
    # last query only, the second read's.
    table, view, reads = (f"{p}_{uuid.uuid4().hex[:6]}" for p in ("orders", "v", "reads"))
    changed = min(CHANGED)
    postgres.psql(f"create table {table} (id bigint, status text, amount double precision, "
                  "customer_id bigint)")
    rows = sink_rows(drop_tombstoned=False)
    postgres.psql(f"insert into {table} values " + ",".join(
        f"({r['id']},'{r['status']}',{r['amount']},{r['customer_id']})" for r in rows))
    postgres.psql(f"create sequence {reads}; create table {view}_from (k bigint)")
    postgres.psql(f"insert into {view}_from values (1000000000)")
    # (select nextval(...)) is an InitPlan: evaluated once per query of the view.
    postgres.psql(
        f"create view {view} as select * from {table} union all select * from {table} "
        f"where id = {changed} and (select nextval('{reads}')) >= (select k from {view}_from)")
    password_file = tmp_path / "pw"
    password_file.write_text(postgres.password)

    def run() -> tuple[int, dict[str, Any], str]:
        return reconcile(
            lab, "--topic", topic["name"], "--sink", f"{postgres.jdbc_url}?table={view}",
            "--sink-option", f"user={postgres.user}",
            "--sink-option", f"password-file={password_file}", "--key", "id",
            "--compare", "status,amount", "--shuffle", "hashes")

    code, doc, stderr = run()
    assert code == 1, stderr
    assert doc["counts"]["mismatched"] == len(CHANGED)
    queries = int(postgres.psql(f"select last_value from {reads}"))
    assert queries >= 2, queries  # the first read and the second, at least
    postgres.psql(f"alter sequence {reads} restart; update {view}_from set k = {queries}")
    code, doc, stderr = run()
    assert code == 3, (stderr, doc)
    assert stderr.startswith("kaudit: error: the sink changed while kaudit read it: "), stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert postgres.password not in stderr


def test_a_password_with_url_characters_in_the_jdbc_url_reads_the_sink_and_never_shows(
        lab: Lab, topic: dict[str, Any], postgres: Postgres, tmp_path: Path) -> None:
    import html
    from urllib.parse import quote

    role, password = f"amp_{uuid.uuid4().hex[:6]}", "p&ss %w0rd+x"
    table = f"orders_{uuid.uuid4().hex[:6]}"
    postgres.psql(f"create role {role} login password '{password}'")
    postgres.psql(f"create table {table} (id bigint, status text)")
    postgres.psql(f"grant select on {table} to {role}")
    encoded = quote(password, safe="")
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--key", "id", "--compare", "status", "--sink",
        f"{postgres.jdbc_url}?table={table}&user={role}&password={encoded}")
    # Read as that role (an empty table: every record is missing), not refused (exit 3).
    assert code == 1, stderr
    assert doc["counts"]["missing_in_sink"] == doc["counts"]["topic_records"] == N
    assert doc["sink"]["uri"] == (f"{postgres.jdbc_url}?user={role}&password=*****"
                                  f"&table={table}")
    shown = json.dumps(doc) + stderr
    assert password not in shown and encoded not in shown
    page = tmp_path / "report.html"
    code, _, stderr = reconcile(
        lab, "--topic", topic["name"], "--key", "id", "--compare", "status", "--sink",
        f"{postgres.jdbc_url}?table={table}&user={role}&password={encoded}",
        "-o", str(page), "--format", "html")
    assert code == 1, stderr
    text = page.read_text(encoding="utf-8")
    assert f"&amp;table={table}" in text  # the sink is on the page, its password not
    for form in (password, encoded, html.escape(password)):
        assert form not in text + stderr, form


def test_matching_sink_exits_0(lab: Lab, topic: dict[str, Any], tmp_path: Path) -> None:
    sink = tmp_path / "good.jsonl"
    sink.write_text("".join(
        json.dumps({"id": i, "status": "new", "amount": amount(i)}) + "\n"
        for i in range(N)))
    code, doc, stderr = reconcile(lab, "--topic", topic["name"], "--sink", f"json:{sink}",
                                  "--key", "id", "--compare", "status,amount")
    assert code == 0, stderr
    assert doc["verdict"] == "pass" and doc["counts"]["sink_rows"] == N
    # the pinned range is in the report, ready to repeat the run
    assert set(doc["repeat_with"]["--to"]) == {"0", "1", "2"}


def test_unknown_column_is_exit_2(lab: Lab, topic: dict[str, Any], tmp_path: Path) -> None:
    sink = tmp_path / "s.jsonl"
    sink.write_text(json.dumps({"id": 1, "status": "new"}) + "\n")
    code, _, stderr = reconcile(lab, "--topic", topic["name"], "--sink", f"json:{sink}",
                                "--key", "id", "--compare", "amount")
    assert code == 2 and "no column 'amount'" in stderr


def test_unreachable_sink_and_cluster_are_exit_3(lab: Lab, topic: dict[str, Any]) -> None:
    code, _, stderr = reconcile(lab, "--topic", topic["name"], "--sink",
                                "jdbc:postgresql://127.0.0.1:1/db?table=t", "--key", "id")
    assert code == 3 and "cannot read sink" in stderr
    result = run_kaudit("reconcile", "-b", "127.0.0.1:1", "--timeout", "2", "--topic", "t",
                        "--sink", "table:db.t")
    assert result.code == 3


@pytest.fixture(scope="module")
def raw_sink(topic: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The values as text, keyed by the Kafka message key: one missing, one changed."""
    path = tmp_path_factory.mktemp("raw") / "raw.jsonl"
    lines = []
    for i in range(N):
        if i == 7:  # missing
            continue
        value = {"id": i, "status": "new", "amount": amount(i), "customer": {"id": i % 7}}
        text = json.dumps(value) if i != 8 else json.dumps({**value, "status": "paid"})
        lines.append(json.dumps({"key": str(i), "value": text}) + "\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("value_format", ["string", "bytes"])
def test_string_and_bytes_values_by_message_key(lab: Lab, topic: dict[str, Any],
                                                raw_sink: Path, value_format: str) -> None:
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"json:{raw_sink}", "--key", "@key",
        "--value-format", value_format, "--compare", "value", "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert (counts["topic_records"], counts["sink_rows"]) == (N, N - 1)
    assert (counts["missing_in_sink"], counts["mismatched"], counts["extra_in_sink"],
            counts["duplicated_in_sink"]) == (1, 1, 0, 0)
    assert keys_of(doc, "missing_in_sink") == {7}
    assert keys_of(doc, "mismatched") == {8}
    changed = doc["samples"]["mismatched"][0]
    assert changed["column"] == "value"
    if value_format == "string":  # the text itself is shown; bytes only by their hash
        assert '"status": "paid"' in changed["sink_value"]


def test_composite_key_with_a_nested_field(lab: Lab, topic: dict[str, Any],
                                           parquet_sink: Path) -> None:
    # customer.id is read from the nested value and matched with the sink's customer_id
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"parquet:{parquet_sink}",
        "--key", "id,customer.id", "--compare", "status,amount", "--samples", "10")
    assert code == 1, stderr

    def keys(cls: str) -> set[str]:
        return {s["key"] for s in doc["samples"].get(cls, [])}

    def composite(ids: set[int]) -> set[str]:
        return {f"{i}|{i % 7}" for i in ids}

    assert keys("missing_in_sink") == composite(MISSING)
    assert keys("duplicated_in_sink") == composite(DUPLICATED)
    assert keys("mismatched") == composite(CHANGED)
    assert keys("extra_in_sink") == {"1000|0"}
    assert doc["counts"]["missing_in_sink"] == len(MISSING)


@pytest.fixture(scope="module")
def truncated_topic(lab: Lab) -> Iterator[dict[str, Any]]:
    """2 partitions of JSON records; partition 0 loses its first records to delete-records
    (as retention would), moving its log start offset."""
    from confluent_kafka import Producer, TopicPartition

    name = create_topic(lab, "coords", 2)
    coords: dict[int, tuple[int, int]] = {}
    record = placing(coords)
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for i in range(40):
        producer.produce(name, key=str(i), value=json.dumps({"id": i, "amount": amount(i)}),
                         partition=i % 2, on_delivery=record)
    producer.flush(30)
    deleted_below = 5
    delete_records_before(lab, TopicPartition(name, 0, deleted_below))
    yield {"name": name, "coords": coords, "deleted_below": deleted_below}
    admin(lab).delete_topics([name])


def test_coordinates_mode_and_a_range_below_the_log_start(
        lab: Lab, truncated_topic: dict[str, Any], tmp_path: Path) -> None:
    name, coords = truncated_topic["name"], truncated_topic["coords"]
    below = truncated_topic["deleted_below"]
    deleted = {i for i, (p, o) in coords.items() if p == 0 and o < below}
    missing, changed, duplicated = 21, 22, 23
    rows = []
    for i, (p, o) in sorted(coords.items()):
        if i == missing:
            continue
        row = {"topic": name, "partition": p, "offset": o, "id": i,
               "amount": amount(i) + (1.0 if i == changed else 0.0)}
        rows.append(row)
        if i == duplicated:
            rows.append(dict(row))
    # a row another topic wrote to the same table: not ours to judge
    rows.append({"topic": "other", "partition": 0, "offset": 999, "id": 999, "amount": 0.0})
    sink = tmp_path / "connect.jsonl"
    sink.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, doc, stderr = reconcile(
        lab, "--topic", name, "--sink", f"json:{sink}", "--mode", "coordinates",
        "--key", "id", "--compare", "amount", "--from", '{"0": 0, "1": 0}', "--samples", "10")
    assert code == 1, stderr
    counts = doc["counts"]
    assert doc["source"]["log_start"]["0"] == truncated_topic["deleted_below"]
    assert doc["source"]["offsets"]["0"][0] == truncated_topic["deleted_below"]
    assert counts["topic_records"] == 40 - len(deleted)
    assert (counts["missing_in_sink"], counts["mismatched"], counts["duplicated_in_sink"],
            counts["extra_in_sink"]) == (1, 1, 1, 0)
    samples = doc["samples"]
    assert [(s["partition"], s["offset"]) for s in samples["missing_in_sink"]] == [
        coords[missing]]
    assert keys_of(doc, "mismatched") == {changed}
    assert keys_of(doc, "duplicated_in_sink") == {duplicated}
    # the records retention took are unverifiable, never missing or extra
    assert keys_of(doc, "unverifiable") == deleted
    # the sink rows at lost offsets, and the lost offsets themselves, each counted once
    assert counts["unverifiable"] == len(deleted)
    assert counts["unverifiable_offsets"] == truncated_topic["deleted_below"]
