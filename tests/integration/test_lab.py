"""The lab is a real Kafka cluster: it replicates, loses brokers and recovers like one."""

from __future__ import annotations

import json
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, lab_admin, run_kaudit, wait_for

pytestmark = pytest.mark.kafka


def admin(lab: Lab) -> Any:
    """One long-lived admin client per lab (a dropped client cancels its futures)."""
    return lab_admin(lab.bootstrap)


def create_topic(lab: Lab, partitions: int = 3, rf: int = 3, **config: str) -> str:
    from confluent_kafka.cimpl import NewTopic

    name = f"test-{uuid.uuid4().hex[:8]}"
    fut = admin(lab).create_topics([NewTopic(name, partitions, rf, config=config)])[name]
    fut.result(timeout=30)

    def led() -> bool:
        found = partitions_of(lab, name)
        return len(found) == partitions and all(p.leader >= 0 for p in found)

    wait_until(led, 30, "leaders")
    return name


def partitions_of(lab: Lab, topic: str) -> list[Any]:
    # A broker that has not applied the creation yet answers with the topic in error and
    # no partitions, which would make every all(...) over them vacuously true. Brokers
    # apply it one by one, and each request may go to another broker: one that knew the
    # topic does not mean the next one asked does, so ask again for a while.
    deadline = time.monotonic() + 30
    while True:
        md = admin(lab).list_topics(topic=topic, timeout=10).topics[topic]
        if (md.error is None and md.partitions) or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    assert md.error is None and md.partitions, f"{topic}: {md.error or 'no partitions'}"
    return [md.partitions[p] for p in sorted(md.partitions)]


def wait_until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    if not wait_for(cond, timeout):
        raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def delete_records_before(lab: Lab, tp: Any) -> None:
    """delete-records up to ``tp.offset`` (-1: the high watermark), each try with a new
    admin client: the long-lived one, after a session of broker kills, answered _NOENT
    "No leaders found" for a minute about a topic it had just written to (seen in CI)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    def deleted() -> bool:
        client = AdminClient({"bootstrap.servers": lab.bootstrap})
        try:
            client.delete_records([tp], request_timeout=15)[tp].result(30)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError._NOENT or error.retriable():
                return False
            raise
        return True

    wait_until(deleted, 60, f"records of {tp.topic}-{tp.partition} before {tp.offset} "
                            "deleted")


def produce(lab: Lab, topic: str, count: int, **conf: Any) -> tuple[int, list[str]]:
    """Produce ``count`` messages; return (acked, error names)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": lab.bootstrap, "acks": "all",
                         "message.timeout.ms": 15000, **conf})
    acked, errors = [0], []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            acked[0] += 1
        else:
            errors.append(err.name())

    for i in range(count):
        producer.produce(topic, value=str(i).encode(), on_delivery=on_delivery)
        producer.poll(0)
    # Every message gets its answer: flush outlasts the message timeout.
    producer.flush(int(conf.get("message.timeout.ms", 15000)) / 1000 + 15)
    return acked[0], errors


def test_status_reports_three_live_brokers_and_a_controller(lab: Lab) -> None:
    doc = lab.status()
    assert doc["bootstrap"] == lab.bootstrap
    brokers = doc["brokers"]
    assert [b["id"] for b in brokers] == [1, 2, 3]  # type: ignore[union-attr,index]
    assert all(b["alive"] for b in brokers)  # type: ignore[union-attr,index]
    assert [c["alive"] for c in doc["controllers"]] == [True]  # type: ignore[union-attr,index]
    env = lab.kaudit("env")
    # A plaintext lab also clears a secured lab's client settings from an earlier eval.
    assert env.stdout.splitlines() == [f"export KAUDIT_BOOTSTRAP_SERVERS={lab.bootstrap}",
                                       "unset KAUDIT_COMMAND_CONFIG"]
    as_json = json.loads(lab.kaudit("env", "-f", "json").stdout)
    assert as_json == {"schema": "kaudit.lab.env/v1", "variables": {
        "KAUDIT_BOOTSTRAP_SERVERS": lab.bootstrap, "KAUDIT_COMMAND_CONFIG": None}}


def test_cluster_command_describes_the_lab(lab: Lab) -> None:
    result = run_kaudit("cluster", "-b", lab.bootstrap, "--format", "json")
    assert result.code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kaudit.cluster/v1"
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3]
    assert doc["controller_id"] in (1, 2, 3)
    assert doc["cluster_id"]
    table = run_kaudit("cluster", "--format", "table",
                       env={"KAUDIT_BOOTSTRAP_SERVERS": lab.bootstrap})
    assert table.code == 0 and "cluster id" in table.stdout and "127.0.0.1" in table.stdout


def test_thousand_messages_with_acks_all_all_come_back(lab: Lab) -> None:
    from confluent_kafka import Consumer

    topic = create_topic(lab, partitions=3, rf=3)
    assert [len(p.replicas) for p in partitions_of(lab, topic)] == [3, 3, 3]
    acked, errors = produce(lab, topic, 1000)
    assert (acked, errors) == (1000, [])
    consumer = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 1000 and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add(int(msg.value()))
    consumer.close()
    assert seen == set(range(1000))


def test_killed_broker_leaves_isr_writes_continue_and_it_rejoins(
        lab: Lab, restore_brokers: None) -> None:
    topic = create_topic(lab, partitions=3, rf=3, **{"min.insync.replicas": "2"})
    assert lab.kaudit("kill", "2").code == 0
    assert [b["alive"] for b in lab.status()["brokers"]] == [True, False, True]  # type: ignore
    # Right after the crash the cluster may still name broker 2 to clients as controller:
    # reading the cluster's identity must still answer, not wait out --timeout and exit 3.
    looked = run_kaudit("cluster", "-b", lab.bootstrap, "--timeout", "10", "-f", "json")
    assert looked.code == 0, looked.stderr
    assert json.loads(looked.stdout)["cluster_id"]
    wait_until(lambda: all(2 not in p.isrs for p in partitions_of(lab, topic)), 60,
               "broker 2 to leave the ISR")
    assert produce(lab, topic, 200) == (200, [])
    started = lab.kaudit("start", "2")
    assert started.code == 0 and "restarted" in started.stderr
    wait_until(lambda: all(2 in p.isrs for p in partitions_of(lab, topic)), 90,
               "broker 2 to rejoin the ISR")


def test_two_brokers_down_blocks_acks_all_with_not_enough_replicas(
        lab: Lab, restore_brokers: None) -> None:
    topic = create_topic(lab, partitions=1, rf=3, **{"min.insync.replicas": "2"})
    leader = partitions_of(lab, topic)[0].leader
    others = [b for b in (1, 2, 3) if b != leader]
    assert lab.kaudit("kill", str(others[0]), "--signal", "TERM").code == 0
    assert lab.kaudit("kill", str(others[1])).code == 0
    # TERM starts a controlled shutdown that can take seconds, with the broker still taking
    # connections: a producer bootstrapping through it then hears nothing and times out.
    wait_until(lambda: not any(b["alive"] for b in lab.status()["brokers"]  # type: ignore
                               if b["id"] in others), 60, "the killed brokers to exit")
    wait_until(lambda: len(partitions_of(lab, topic)[0].isrs) == 1, 60, "ISR of one")

    def refused() -> bool:
        # The leader may count the TERMed follower in its ISR a moment longer than the
        # metadata says (the controller shrank it): a write then waits for it and times
        # out instead of being refused. Never acknowledged either way.
        acked, errors = produce(lab, topic, 1, retries=0, **{
            "enable.idempotence": False, "request.timeout.ms": 5000,
            "message.timeout.ms": 10000})
        assert acked == 0, errors
        return errors == ["NOT_ENOUGH_REPLICAS"]

    wait_until(refused, 90, "the leader to refuse with NOT_ENOUGH_REPLICAS")
    # retries=0 so the broker's refusal is reported instead of retried until timeout; a
    # long message timeout so that a loaded machine cannot turn the refusal into a timeout.
    acked, errors = produce(lab, topic, 20, retries=0, **{"enable.idempotence": False,
                                                         "message.timeout.ms": 120000})
    assert acked == 0
    assert set(errors) == {"NOT_ENOUGH_REPLICAS"}


def test_paused_broker_is_reported_and_resumed(lab: Lab, restore_brokers: None) -> None:
    paused = lab.kaudit("kill", "3", "--signal", "STOP", "-f", "json")
    assert paused.code == 0, paused.stderr
    # -f json: the status document as the kill left the lab, the same as `lab status`.
    assert json.loads(paused.stdout)["brokers"][2]["state"] == "paused"
    broker3 = lab.status()["brokers"][2]  # type: ignore[index]
    assert (broker3["state"], broker3["alive"]) == ("paused", False)
    resumed = lab.kaudit("start", "3", "--format", "json")
    assert resumed.code == 0 and "resumed" in resumed.stderr
    assert json.loads(resumed.stdout)["brokers"][2]["state"] == "running"
    assert lab.status()["brokers"][2]["state"] == "running"  # type: ignore[index]


def test_up_on_a_running_lab_is_refused(lab: Lab) -> None:
    again = lab.kaudit("up")
    assert again.code == 2
    assert "already running" in again.stderr and lab.bootstrap in again.stderr


def test_unknown_node_and_double_kill(lab: Lab) -> None:
    assert lab.kaudit("kill", "42").code == 2


def test_second_lab_side_by_side_and_broker_that_dies_on_start(lab: Lab) -> None:
    import socket

    with tempfile.TemporaryDirectory(prefix="kaudit-lab2-") as other:
        bad_value = run_kaudit("lab", "up", "--brokers", "1", "--state-dir", other,
                               "--broker-config", "num.network.threads=not-a-number")
        assert bad_value.code == 3
        assert "num.network.threads" in bad_value.stderr
        run_kaudit("lab", "down", "--purge", "--state-dir", other)
        # A listener port someone else holds: storage formats, the broker dies binding it.
        with socket.socket() as squatter:
            squatter.bind(("127.0.0.1", 0))
            squatter.listen(1)
            port = squatter.getsockname()[1]
            dies = run_kaudit("lab", "up", "--brokers", "1", "--state-dir", other,
                              "--broker-config", f"listeners=PLAINTEXT://127.0.0.1:{port}")
        assert dies.code == 3
        assert "broker 1 exited during start" in dies.stderr
        assert "Traceback" not in dies.stderr
        errors = [ln for ln in dies.stderr.splitlines() if ln.startswith("kaudit: error:")]
        assert len(errors) == 1 and "Address already in use" in errors[0]
        run_kaudit("lab", "down", "--purge", "--state-dir", other)
        single = run_kaudit("lab", "up", "--brokers", "1", "--state-dir", other, "-f", "json")
        try:
            assert single.code == 0, single.stderr
            up_doc = json.loads(single.stdout)
            assert up_doc["schema"] == "kaudit.lab/v1" and up_doc["bootstrap"] != lab.bootstrap
            assert [(b["id"], b["alive"]) for b in up_doc["brokers"]] == [(1, True)]
            info = run_kaudit("cluster", "-b", up_doc["bootstrap"], "-f", "json")
            assert [b["id"] for b in json.loads(info.stdout)["brokers"]] == [1]
        finally:
            down = run_kaudit("lab", "down", "--purge", "--state-dir", other, "-f", "json")
        assert down.code == 0, down.stderr
        left = json.loads(down.stdout)
        assert left["purged"] is True and not Path(other).exists()
        assert [n["state"] for n in left["brokers"] + left["controllers"]] == ["down", "down"]
    # the first lab is untouched
    assert all(b["alive"] for b in lab.status()["brokers"])  # type: ignore[union-attr,index]


def test_sigterm_during_lab_up_stops_every_node_it_started(lab: Lab) -> None:
    """A CI job's cancel (SIGTERM) while `lab up` waits for its brokers: the nodes it
    launched are stopped, exit 130. The brokers are pointed at a controller port nothing
    listens on, so the lab can never be ready before the signal lands."""
    import os
    import signal
    import subprocess
    import sys

    with tempfile.TemporaryDirectory(prefix="kaudit-lab-term-") as other:
        state = Path(other) / "lab"
        up = subprocess.Popen(
            [sys.executable, "-m", "kaudit", "lab", "up", "--state-dir", str(state),
             "--wait", "300", "--broker-config", "controller.quorum.voters=100@127.0.0.1:1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            def launched() -> list[int]:
                try:
                    nodes = json.loads((state / "lab.json").read_text())["nodes"]
                except (OSError, ValueError, KeyError):
                    return []
                return [n["pid"] for n in nodes] if all(n.get("pid") for n in nodes) else []

            wait_until(lambda: bool(launched()), 120, "lab up to launch its nodes")
            pids = launched()
            assert len(pids) == 4 and up.poll() is None
            up.send_signal(signal.SIGTERM)
            _, stderr = up.communicate(timeout=60)
            assert up.returncode == 130, stderr
            assert "Traceback" not in stderr
            # Each node was killed and waited for before lab up exited.
            assert [p for p in pids if os.path.exists(f"/proc/{p}")] == [], pids
        finally:
            if up.poll() is None:
                up.kill()
            run_kaudit("lab", "down", "--purge", "--state-dir", str(state))
    assert all(b["alive"] for b in lab.status()["brokers"])  # type: ignore[union-attr,index]
