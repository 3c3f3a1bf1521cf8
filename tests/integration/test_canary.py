"""`kaudit canary` on the real lab, scraped by a real Prometheus: a truncation counted
exactly with its cause; acks=all through the same fault and a rolling restart of every
broker, nothing lost and no partition moved; records deleted ahead of a stalled reader,
exactly; a frozen cluster, and a second canary on the same topic; a fenced transactional
canary."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.manager import lab_kill, lab_resume, lab_start
from kaudit.probe.payload import decode
from kaudit.waiting import wait_for
from tests.conftest import Lab
from tests.integration.test_lab import admin, delete_records_before, wait_until

pytestmark = pytest.mark.kafka


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    """A real Prometheus on loopback, scraping one target every second."""

    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, expr: str) -> list[dict[str, Any]]:
        q = urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=5) as answer:
            body = json.load(answer)
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def firing(self) -> set[str]:
        with urllib.request.urlopen(f"{self.url}/api/v1/alerts", timeout=5) as answer:
            alerts = json.load(answer)["data"]["alerts"]
        return {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None


@pytest.fixture
def metrics_port() -> int:
    return free_port()


@pytest.fixture
def prometheus(tmp_path: Path, metrics_port: int) -> Iterator[Prometheus]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed (.ci/run installs Debian's package)")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [" + json.dumps(str(RULES)) + "]\n"
        "scrape_configs:\n"
        f"  - job_name: kaudit-canary\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n")
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen([binary, f"--config.file={config}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    try:
        assert wait_for(ready, 60), (tmp_path / "prometheus.log").read_text()[-2000:]
        yield Prometheus(url)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "kaudit-canary.rules.yml"
DASHBOARD = DEPLOY / "grafana" / "kaudit-canary.json"


def start_canary(lab: Lab, tmp_path: Path, metrics_port: int, *args: str
                 ) -> tuple[subprocess.Popen[str], Path]:
    events = tmp_path / "events.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "canary", "-b", lab.bootstrap, "--format", "json",
         "--metrics-port", str(metrics_port), "--events", str(events), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        stdin=subprocess.DEVNULL)
    return proc, events


def stop_canary(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    """SIGTERM, the way a service is stopped: the summary, and the run's own exit code."""
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    print(stderr[-3000:])  # shown when the test fails: what the canary said
    return proc.returncode, json.loads(stdout) if stdout.strip() else {}, stderr


def events_of(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def gaps_in_log(lab: Lab, topic: str) -> dict[int, int]:
    """Per partition, the sequences missing below the highest one in the log up to its high
    watermark when asked (a canary may still be writing: a read to the end would chase it)."""
    return {p: (max(s) + 1 - len(s)) if s else 0 for p, s in read_log(lab, topic).items()}


def read_log(lab: Lab, topic: str) -> dict[int, dict[int, set[int]]]:
    """Per partition, each canary sequence's offsets in the log up to its high watermark
    when asked: read by a consumer of our own, not by kaudit."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in parts}
        pending = {p for p in parts if ends[p] > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        seqs: dict[int, dict[int, set[int]]] = {p: {} for p in parts}
        deadline = time.monotonic() + 120
        while pending:
            assert time.monotonic() < deadline, f"{topic}: not read up to {ends} in 120 s"
            for msg in consumer.consume(1000, 1):
                if msg.error() is not None or msg.partition() not in pending:
                    continue
                if (record := decode(msg.value())) is not None:
                    seqs[msg.partition()].setdefault(record.partition_seq, set()).add(
                        msg.offset())
                if msg.offset() + 1 >= ends[msg.partition()]:
                    pending.discard(msg.partition())
    finally:
        consumer.close()
    return seqs


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return str(answer.read().decode())


def gauge(port: int, name: str) -> float:
    """The sum of the series whose line starts with ``name`` (the metric's name and ``{``,
    or some of its labels too); NaN (no comparison holds) until the endpoint listens."""
    try:
        text = scrape(port)
    except OSError:
        return float("nan")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name))


def assignment(lab: Lab, topic: str) -> dict[int, list[int]]:
    md = admin(lab).list_topics(topic, timeout=10)
    return {p: list(m.replicas) for p, m in md.topics[topic].partitions.items()}


def test_acks_1_loses_what_the_log_lost_and_acks_all_beside_it_nothing_nor_in_a_restart(
        lab: Lab, restore_brokers: None, tmp_path: Path, prometheus: Prometheus,
        metrics_port: int) -> None:
    """Scenarios (a), (b) and (d) in one fault: an acks=1 canary injects
    lag-then-kill-leader on its partition 0 and loses exactly what an independent read of
    the log finds missing, with cause ``truncated``, as Prometheus shows; an acks=all
    canary (min.insync.replicas=2) runs beside it, one of its partitions led by the broker
    the fault kills with the followers it freezes, and loses nothing, then nothing through
    a rolling restart of every broker, which moves none of its partitions.

    The acks=all canary expects at-least-once, not exactly-once: on a leader change
    librdkafka's idempotent producer can answer OUT_OF_ORDER_SEQUENCE_NUMBER with an epoch
    bump and send a few in-flight records again, which the broker then keeps twice
    (librdkafka issue 4953; it happened here). What acks=all with min.insync.replicas=2
    promises is no loss; a duplicate the canary reports must be one the log really holds."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    safe = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    safe_proc, safe_events = start_canary(lab, tmp_path / "b", free_port(), "--topic", safe,
                                          "--rate", "300", "--expect", "at-least-once")
    try:
        wait_until(lambda: safe in admin(lab).list_topics(timeout=10).topics, 60,
                   "the acks=all canary's topic")
        before = assignment(lab, safe)
        # A partition per broker, each led by a broker of its own: whichever broker the
        # fault kills leads one of them, its followers the two the fault freezes.
        assert sorted(r[0] for r in before.values()) == [1, 2, 3], before
        in_prometheus, truth, doc, events = _truncation_by_acks_1(lab, tmp_path / "a",
                                                                   prometheus, metrics_port)
        assert safe_proc.poll() is None, safe_proc.communicate()[1]
        for broker in (1, 2, 3):  # a controlled shutdown, then the restart: one at a time
            lab_kill(Path(lab.state_dir), broker, "TERM")
            lab_start(Path(lab.state_dir), broker, wait_s=120)
        after = assignment(lab, safe)
    finally:
        code, safe_doc, stderr = stop_canary(safe_proc)
    _assert_truncation_exact(in_prometheus, truth, doc, events)
    assert code == 0, stderr + json.dumps(safe_doc.get("violations"))
    assert after == before  # 0 reassignments: the canary never moves its partitions
    totals = safe_doc["totals"]
    assert totals["lost"] == totals["acked_unread"] == totals["beyond_window"] == 0, totals
    copies = read_log(lab, safe)
    duplicated = [e for e in events_of(safe_events) if e["kind"] == "duplicated"]
    assert len(duplicated) == totals["duplicated"], (duplicated, totals)
    for e in duplicated:  # the second copy is where the canary saw it, and a first is too
        offsets = copies[e["partition"]].get(e["seq"], set())
        assert e["offset"] in offsets and len(offsets) >= 2, (e, offsets)
    # A send left unanswered by a broker going down is indeterminate, never lost; each such
    # send is read back or settled absent.
    assert totals["sent"] == totals["acked"] + totals["failed"] + totals["indeterminate"], totals
    assert totals["read"] == (totals["acked"] + totals["indeterminate_present"]
                              + totals["failed_present"]) > 0, totals
    assert safe_doc["settings"]["topic_created"] and safe_doc["verdict"] == "pass"
    assert not [e for e in events_of(safe_events) if e["kind"] == "lost"]
    # The canary's topic is a service's: it stays.
    assert safe in admin(lab).list_topics(timeout=10).topics


def _truncation_by_acks_1(lab: Lab, tmp_path: Path, prometheus: Prometheus, metrics_port: int
                          ) -> tuple[float | None, dict[int, int], dict[str, Any], Path]:
    """Scenario (a)'s run: its losses as Prometheus had them, the log's own gaps, its
    summary and its events file."""
    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    proc, events = start_canary(
        lab, tmp_path, metrics_port, "--topic", topic, "--rate", "600", "--acks", "1",
        "--no-idempotence", "--fault", "lag-then-kill-leader:3", "--fault-at", "3",
        "--fault-duration", "3", "--lab-state-dir", lab.state_dir)
    lost_series = f'kaudit_canary_lost_records_total{{cause="truncated",topic="{topic}"}}'
    lost_now = f"sum({lost_series})"
    try:
        assert wait_for(lambda: any(e["kind"] == "heal" and "restarted" in e["detail"]
                                    for e in events_of(events)) or proc.poll() is not None,
                        150), "the killed leader was not restarted"
        assert proc.poll() is None, proc.communicate()[1]

        def own_count() -> float:  # the canary's own endpoint, read by the test
            return gauge(metrics_port, 'kaudit_canary_lost_records_total{cause="truncated",')

        # The losses are declared as the reader passes them, or as soon as the new leader's
        # log end shows them cut (before a later record lands there); the log itself shows a
        # gap only once a later record is written above it, and Prometheus has the count once
        # it scraped after that. So the log is read again each time: wait until the canary,
        # Prometheus and the log's own gaps agree (the end of the test reads them again).
        assert wait_for(lambda: own_count() > 0, 60), "the canary declared no loss"
        counts: list[float | None] = []

        def agreed() -> bool:
            counts[:] = [gaps_in_log(lab, topic)[0], own_count(), prometheus.value(lost_now)]
            return counts[0] == counts[1] == counts[2]

        assert wait_for(agreed, 90), counts  # (the log's gaps, the canary's, Prometheus')
        sent = prometheus.query(f'kaudit_canary_records_total{{fate="sent",topic="{topic}"}}')
        assert sorted(r["metric"]["partition"] for r in sent) == ["0", "1", "2"]
        acks = prometheus.value(f'sum(kaudit_canary_ack_latency_seconds_count{{topic="{topic}"}})')
        assert acks is not None and acks > 0
        # Every panel of the shipped dashboard has series, and the loss alert fires.
        for panel in json.loads(DASHBOARD.read_text())["panels"]:
            expr = panel["targets"][0]["expr"].replace("$__rate_interval", "1m")
            assert prometheus.query(expr), panel["title"]
        assert wait_for(lambda: "KafkaCanaryLostAcknowledgedRecords" in prometheus.firing(),
                        30), prometheus.firing()
        in_prometheus = prometheus.value(lost_now)
    finally:
        code, doc, stderr = stop_canary(proc)
    assert code == 1, stderr  # a loss: the run fails, as probe's does
    return in_prometheus, gaps_in_log(lab, topic), doc, events


def _assert_truncation_exact(in_prometheus: float | None, truth: dict[int, int],
                             doc: dict[str, Any], events: Path) -> None:
    """The acks=1 run's losses: on partition 0 only, equal to the log's gaps read by our
    own consumer, each one truncated with its evidence, in the summary, the events and
    Prometheus alike."""
    assert truth[0] > 0 and truth[1] == truth[2] == 0, truth
    assert doc["totals"]["lost"] == truth[0] == in_prometheus
    assert doc["lost_causes"] == {"truncated": truth[0]}
    assert doc["totals"]["failed"] == doc["totals"]["indeterminate"] == 0
    assert doc["totals"]["acked_unread"] == 0
    lost = [e for e in events_of(events) if e["kind"] == "lost"]
    assert len(lost) == truth[0] and {e["cause"] for e in lost} == {"truncated"}
    # Each proven by the record that took its offset, or (when the watcher saw the new
    # leader before anything was written there) by where the leader's log ends its epoch.
    assert all(e["partition"] == 0 and ("sequence" in e["evidence"]
                                        or " in leader epoch " in e["evidence"]) for e in lost)
    assert doc["verdict"] == "fail" and doc["violations"][0].startswith(
        f"lost: {truth[0]} acknowledged record(s) ({truth[0]} truncated)")


def test_a_frozen_cluster_costs_availability_not_records_and_a_restart_counts_only_its_own(
        lab: Lab, restore_brokers: None, tmp_path: Path, metrics_port: int) -> None:
    """Every broker frozen: availability drops to 0, the canary neither exits nor declares
    a loss, and goes on when they are back; in transactions, some aborted on purpose. Then
    a second canary on the same topic counts none of the first one's records."""
    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    read = 'kaudit_canary_records_total{fate="read",'
    proc, _ = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate", "200",
                           "--transactional", "--txn-size", "50", "--abort-ratio", "0.25",
                           "--late-after", "3", "--expect", "exactly-once")
    try:
        assert wait_for(lambda: proc.poll() is not None or gauge(metrics_port, read) > 0, 60)
        assert proc.poll() is None, proc.communicate()[1]
        for broker in (1, 2, 3):
            lab_kill(Path(lab.state_dir), broker, "STOP")
        assert wait_for(lambda: gauge(metrics_port, "kaudit_canary_produce_available{") == 0
                        and gauge(metrics_port, "kaudit_canary_consume_available{") == 0, 30)
        frozen_read = gauge(metrics_port, read)
        assert proc.poll() is None  # out of reach is not a reason to stop
        lab_resume(Path(lab.state_dir), [1, 2, 3], wait_s=120)
        # It goes on: new records read, both kinds of availability back, and (every fourth
        # transaction is aborted on purpose, once a transaction ends at all) one aborted. A
        # freeze soon after the start leaves no aborted transaction before it: waited for,
        # not hoped for.
        aborted = 'kaudit_canary_records_total{fate="aborted",'
        assert wait_for(lambda: (gauge(metrics_port, read) > frozen_read + 200
                        and gauge(metrics_port, aborted) > 0
                        and gauge(metrics_port, "kaudit_canary_produce_available{") == 1
                        and gauge(metrics_port, "kaudit_canary_consume_available{") == 1)
                        or proc.poll() is not None, 120), "the canary did not go on"
        assert proc.poll() is None, "the canary ended by itself"
    finally:
        code, doc, stderr = stop_canary(proc)
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    totals = doc["totals"]
    assert totals["lost"] == totals["duplicated"] == totals["aborted_visible"] == 0, totals
    assert totals["aborted"] > 0 and totals["read"] > 0, totals
    assert totals["sent"] == (totals["acked"] + totals["failed"] + totals["indeterminate"]
                              + totals["aborted"]), totals
    # The same topic again, without transactions: the first run's records (committed and
    # aborted) are another run's, counted nowhere.
    second, _ = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate", "100",
                             "--duration", "4")
    stdout, stderr = second.communicate(timeout=120)
    assert second.returncode == 0, stderr
    again = json.loads(stdout)["totals"]
    assert again["read"] == again["acked"] == again["sent"] > 0, again
    assert again["lost"] == again["duplicated"] == again["beyond_window"] == 0, again
    assert not json.loads(stdout)["settings"]["topic_created"]
    assert "warning" not in stderr  # its topic, made by a canary with its settings


def test_a_canary_on_a_topic_it_did_not_create_says_what_it_cannot_watch(
        lab: Lab, tmp_path: Path, metrics_port: int) -> None:
    """A topic as auto-creation leaves it (one partition, one replica): two brokers of three
    lead nothing the canary writes, and its settings are not the canary's; both said at the
    start, and the run goes on."""
    from confluent_kafka.admin import NewTopic

    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    admin(lab).create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    try:
        proc, _ = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate", "50",
                               "--duration", "2")
        stdout, stderr = proc.communicate(timeout=120)
        leader = admin(lab).list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    finally:
        admin(lab).delete_topics([topic])
    assert proc.returncode == 0, stderr
    others = ", ".join(str(b) for b in (1, 2, 3) if b != leader)
    assert (f"kaudit canary: warning: {topic} has 1 partition(s) for 3 broker(s): broker(s) "
            f"{others} lead nothing the canary writes") in stderr, stderr
    assert (f"kaudit canary: warning: {topic} was not created by the canary: replication "
            "factor 1, min.insync.replicas ") in stderr, stderr
    doc = json.loads(stdout)
    assert not doc["settings"]["topic_created"] and doc["totals"]["read"] > 0


def test_a_fenced_transactional_canary_starts_a_new_session_and_goes_on(
        lab: Lab, tmp_path: Path, metrics_port: int) -> None:
    """A producer of our own takes the canary's transactional id and fences it: the fatal
    error librdkafka then raises (from the canary's next transaction call and again from
    its poll) ends the canary's session, not the canary. The fenced transaction's records
    have no known outcome; nothing is lost, duplicated or read from an aborted one."""
    from confluent_kafka import Producer

    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    read = 'kaudit_canary_records_total{fate="read",'
    proc, _ = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate", "200",
                           "--transactional", "--txn-size", "50", "--expect", "exactly-once")
    try:
        assert wait_for(lambda: proc.poll() is not None or gauge(metrics_port, read) > 0, 60)
        assert proc.poll() is None, proc.communicate()[1]
        fencer = Producer({"bootstrap.servers": lab.bootstrap,
                           "transactional.id": f"kaudit-canary-{canary_run_id(lab, topic)}"})
        fencer.init_transactions(30)
        fenced_at = gauge(metrics_port, read)
        assert wait_for(lambda: gauge(metrics_port, read) > fenced_at + 400
                        or proc.poll() is not None, 60), "the canary did not go on"
        assert proc.poll() is None, "the canary ended by itself"
    finally:
        code, doc, stderr = stop_canary(proc)
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert any("fenced" in note.lower() for note in doc["notes"]), doc["notes"]
    totals = doc["totals"]
    assert totals["lost"] == totals["duplicated"] == totals["aborted_visible"] == 0, totals
    assert totals["sent"] == (totals["acked"] + totals["failed"] + totals["indeterminate"]
                              + totals["aborted"]), totals


def canary_run_id(lab: Lab, topic: str) -> str:
    """The run id a canary's records carry (its transactional id is made of it)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": uuid.uuid4().hex,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None and (record := decode(msg.value())):
                return record.run_id.hex()
        raise AssertionError(f"no canary record in {topic} within 60 s")
    finally:
        consumer.close()


def test_records_deleted_ahead_of_a_stalled_reader_are_lost_as_deleted_exactly(
        lab: Lab, tmp_path: Path, metrics_port: int) -> None:
    from confluent_kafka import TopicPartition

    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    proc, events = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate",
                                "300", "--fault", "stall-reader:10", "--fault-at", "3",
                                "--duration", "15")

    def read_on_p0() -> float:
        return gauge(metrics_port, 'kaudit_canary_records_total{fate="read",partition="0"')

    try:
        assert wait_for(lambda: any(e["kind"] == "fault" for e in events_of(events))
                        or proc.poll() is not None, 60), "the reader was not stalled"
        # The reader holds its position: what it had read of partition 0 when it stopped.
        read_before = int(steady(read_on_p0))
        # The producer goes on (100 records a second on partition 0) ...
        assert wait_for(lambda: log_end(lab, topic, 0) >= read_before + 200, 10)
        end = log_end(lab, topic, 0)
        delete_records_before(lab, TopicPartition(topic, 0, end))
        # ... and the records below `end` were deleted before the stalled reader came back.
        assert read_on_p0() == read_before, "the reader moved before the deletion ended"
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr
    doc = json.loads(stdout)
    [p0] = [p for p in doc["partitions"] if p["partition"] == 0]
    # Offsets [read_before, end) were acknowledged, then deleted before the reader got there.
    assert p0["lost"] == end - read_before and p0["lost_causes"] == {"deleted": p0["lost"]}
    assert p0["read"] + p0["lost"] == p0["acked"] == p0["sent"]
    assert doc["lost_causes"] == {"deleted": p0["lost"]}
    lost = [e for e in events_of(events) if e["kind"] == "lost"]
    assert [e["offset"] for e in lost] == list(range(read_before, end))
    assert all(f"below the log start offset {end}" in e["evidence"] for e in lost)


def steady(read: Any, timeout: float = 10) -> float:
    """``read()`` once two readings half a second apart agree."""
    last = read()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.5)  # the interval between two readings, not a wait for an outcome
        now = read()
        if now == last:
            return float(now)
        last = now
    raise AssertionError(f"still moving after {timeout}s: {last}")


def log_end(lab: Lab, topic: str, partition: int) -> int:
    """The partition's log end offset, asked by a consumer of our own."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": uuid.uuid4().hex})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        return int(high)
    finally:
        consumer.close()


def test_records_past_the_new_log_end_are_truncated_and_the_stop_does_not_wait_for_them(
        lab: Lab, restore_brokers: None, tmp_path: Path, metrics_port: int) -> None:
    """acks=1: partition 0's followers frozen, its leader acknowledges records alone (the
    metric of acknowledged-but-unread records shows them). The canary is stopped (SIGTERM),
    so it sends no more; then the leader is shut down and a follower leads from the log end
    it had copied, with nothing written after it. Those records lie past the new log end:
    ``truncated`` with their leader epoch as evidence, in the report and the events,
    exactly as many as our own read of the log lacks; the stop ends within 5 s of the
    followers' resume (once a new leader can answer), not after the whole drain (30 s)
    waiting for records that cannot come."""
    state = Path(lab.state_dir)
    topic = f"kaudit-test-canary-{uuid.uuid4().hex[:8]}"
    proc, events = start_canary(lab, tmp_path, metrics_port, "--topic", topic, "--rate", "300",
                                "--acks", "1", "--no-idempotence")
    unread = f'kaudit_canary_acked_unread_records{{partition="0",topic="{topic}"}}'
    read = 'kaudit_canary_records_total{fate="read",partition="0",'
    acked = 'kaudit_canary_records_total{fate="acked",partition="0",'
    try:
        assert wait_for(lambda: proc.poll() is not None or gauge(metrics_port, read) > 100, 60)
        assert proc.poll() is None, proc.communicate()[1]
        parts = admin(lab).list_topics(topic, timeout=10).topics[topic].partitions
        leader = parts[0].leader
        followers = [b for b in parts[0].replicas if b != leader]
        led = [p for p, m in parts.items() if m.leader == leader]
        for broker in followers:
            lab_kill(state, broker, "STOP")
        try:
            # The leader takes over a hundred records alone (well within the broker session:
            # the frozen followers stay in the ISR, so one of them can lead next). Counted
            # from the freeze, not as acknowledged-but-unread: a reader lagging on a busy
            # machine leaves records unread that the followers did copy.
            frozen_at = gauge(metrics_port, acked)
            assert wait_for(lambda: gauge(metrics_port, acked) >= frozen_at + 120, 30), \
                scrape(metrics_port)
            assert gauge(metrics_port, unread) >= 100, scrape(metrics_port)
            proc.send_signal(signal.SIGTERM)
            stopped = time.monotonic()

            def answered(p: int) -> bool:  # every send to the leader's partitions acked
                fate = f'kaudit_canary_records_total{{fate="%s",partition="{p}",'
                return gauge(metrics_port, fate % "sent") == gauge(metrics_port, fate % "acked")

            # It sends no more, and the leader answered all it was sent: nothing is left to
            # be written after the new leader's log end.
            assert wait_for(lambda: all(answered(p) for p in led), 30), scrape(metrics_port)
            lab_kill(state, leader, "TERM")  # controlled: leadership moves to a follower now
        finally:
            lab_resume(state, followers, wait_s=120)
            resumed = time.monotonic()
        stdout, stderr = proc.communicate(timeout=120)
        took, settled = time.monotonic() - stopped, time.monotonic() - resumed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    print(stderr[-3000:], f"\nstopped {took:.1f}s after SIGTERM, {settled:.1f}s after the "
          "followers were resumed")
    doc = json.loads(stdout)
    log = read_log(lab, topic)
    lost = [e for e in events_of(events) if e["kind"] == "lost"]
    # Every partition the stopped leader led alone lost what it acknowledged alone (partition
    # 0; another too when it led one more): exactly the sequences our own read lacks.
    for part in doc["partitions"]:
        p = part["partition"]
        missing = set(range(part["sent"])) - set(log[p])
        assert part["failed"] == part["indeterminate"] == 0, part
        assert part["acked"] == part["sent"] and part["lost"] == len(missing), (part, missing)
        assert {e["seq"] for e in lost if e["partition"] == p} == missing, p
        assert part["lost_causes"] == ({"truncated": len(missing)} if missing else {}), part
    assert doc["partitions"][0]["lost"] >= 100, doc["partitions"][0]
    assert doc["totals"]["acked_unread"] == 0, doc["totals"]
    # Past the new end (nothing written there since): the leader's log end is the evidence.
    past_end = [e for e in lost if "ends its log at offset" in e["evidence"]]
    assert past_end, [e["evidence"] for e in lost[:3]]
    assert all(e["cause"] == "truncated" and f"broker {leader}," not in e["evidence"]
               for e in past_end)
    # Settled by the new leader's log end, not by the drain (30 s) running out: had it run
    # out, the records past the end would still be acknowledged-but-unread, and none is
    # (acked_unread 0 above, every one declared truncated). Said without a clock: how long
    # the new leader takes to answer depends on how busy the machine is.
    assert proc.returncode == 1, (proc.returncode, settled, took)
