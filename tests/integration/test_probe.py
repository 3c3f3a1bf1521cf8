"""`kaudit probe` against the real lab: every message accounted for, faults included."""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, interrupt_when, run_kaudit
from tests.integration.test_lab import (
    admin,
    create_topic,
    delete_records_before,
    produce,
    wait_until,
)

pytestmark = [pytest.mark.kafka, pytest.mark.probe]


def probe(lab: Lab, *args: str, timeout: float = 300) -> tuple[int, dict[str, Any], str]:
    result = run_kaudit("probe", "-b", lab.bootstrap, "--format", "json", *args,
                        timeout=timeout)
    doc = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.code, doc, result.stderr


def topic_exists(lab: Lab, name: str) -> bool:
    return name in admin(lab).list_topics(timeout=10).topics


def assert_topic_gone(lab: Lab, name: str) -> None:
    """The brokers apply a deletion one after the other, so ask until none lists it."""
    wait_until(lambda: not topic_exists(lab, name), 30, f"{name} to be deleted")


def test_clean_run_accounts_for_every_message(lab: Lab) -> None:
    code, doc, stderr = probe(lab, "--count", "20000", "--expect", "exactly-once")
    assert code == 0, stderr
    assert doc["schema"] == "kaudit.probe/v1"
    assert (doc["sent"], doc["acked"], doc["failed"], doc["indeterminate"]) == (20000, 20000, 0, 0)
    for cls in ("lost", "duplicated", "reordered", "aborted_visible", "inconsistent_offsets"):
        assert doc[cls] == 0, cls
    assert doc["verdict"] == "pass" and doc["drain_complete"]
    assert sum(p["acked"] for p in doc["partitions"]) == 20000
    assert doc["latency_ms"]["p50"] is not None and doc["latency_ms"]["max"] >= doc[
        "latency_ms"]["p50"]
    assert doc["topic_deleted"]
    assert_topic_gone(lab, doc["topic"])
    assert doc["live_verification"] and not doc["notes"]  # read while it was written


def test_acks_0_and_acks_1_runs_are_accounted_for(lab: Lab) -> None:
    # acks=0 gets no offsets back at all: every message is placed by reading the log.
    for acks in ("0", "1"):
        code, doc, stderr = probe(lab, "--count", "3000", "--acks", acks, "--no-idempotence")
        assert code == 0, (acks, stderr)
        assert (doc["sent"], doc["acked"], doc["lost"]) == (3000, 3000, 0), acks
        assert doc["settings"]["acks"] == acks


def test_leader_kill_with_min_isr_2_loses_nothing(lab: Lab, restore_brokers: None) -> None:
    code, doc, stderr = probe(
        lab, "--count", "30000", "--rate", "3000", "--acks", "all", "--min-insync-replicas", "2",
        "--no-unclean-leader-election", "--fault", "kill-leader", "--fault-at", "30%",
        "--fault-duration", "4", "--lab-state-dir", lab.state_dir, "--expect", "at-least-once")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["lost"] == 0 and doc["sent"] == 30000
    kinds = [e["kind"] for e in doc["events"]]
    assert "fault" in kinds and "heal" in kinds, (doc["notes"], doc["events"])
    assert "leader-change" in kinds  # the kill moved leadership, and the report shows it
    fault = next(e for e in doc["events"] if e["kind"] == "fault")
    assert fault["detail"].startswith("SIGKILL leader")


def lab_fault_run(lab: Lab, fault: str, *args: str, count: int = 12000,
                  fault_at: str = "25%") -> dict[str, Any]:
    """A short acks=all, min.insync.replicas=2 run (2,000 msg/s) under one lab fault; it
    must lose nothing, exit 0, and heal (every broker running again when it ends)."""
    code, doc, stderr = probe(
        lab, "--count", str(count), "--rate", "2000", "--acks", "all",
        "--min-insync-replicas", "2", "--no-unclean-leader-election", "--fault", fault,
        "--fault-at", fault_at, "--lab-state-dir", lab.state_dir, *args)
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["sent"] == count and doc["lost"] == 0, doc["samples"]
    assert doc["sent"] == doc["acked"] + doc["failed"] + doc["indeterminate"]
    assert doc["verdict"] == "pass" and doc["drain_complete"]
    assert not doc["live_verification"]  # a fault always reads the log again after the run
    assert doc["topic_deleted"]
    assert all(b["state"] == "running" for b in lab.status()["brokers"])  # type: ignore[union-attr]
    return doc


def events_of(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in doc["events"] if e["kind"] == kind]


def test_stop_leader_is_a_controlled_shutdown_that_loses_nothing(
        lab: Lab, restore_brokers: None) -> None:
    doc = lab_fault_run(lab, "stop-leader", "--fault-duration", "3",
                        "--expect", "at-least-once")
    [fault] = events_of(doc, "fault")
    assert fault["detail"].startswith("SIGTERM leader")
    broker = fault["detail"].split()[-1]
    assert [e["detail"] for e in events_of(doc, "heal")] == [f"broker {broker} restarted"]
    # A controlled shutdown hands leadership over before the broker exits.
    assert any(e["partition"] == 0 and e["detail"].startswith(f"leader {broker} ->")
               for e in events_of(doc, "leader-change"))


def test_pause_leader_is_healed_and_idempotence_keeps_exactly_once(
        lab: Lab, restore_brokers: None) -> None:
    # A frozen leader keeps its connections open: requests time out and are retried.
    # With idempotence (the default) the retries write nothing twice.
    doc = lab_fault_run(lab, "pause-leader", "--fault-duration", "4",
                        "--expect", "exactly-once")
    [fault] = events_of(doc, "fault")
    assert fault["detail"].startswith("SIGSTOP leader")
    broker = fault["detail"].split()[-1]
    assert [e["detail"] for e in events_of(doc, "heal")] == [f"broker {broker} resumed"]
    assert doc["duplicated"] == 0 and doc["settings"]["idempotence"]


def test_kill_broker_by_id_loses_nothing_and_restarts_it(lab: Lab,
                                                          restore_brokers: None) -> None:
    # Down for longer than broker.session.timeout.ms (9 s): the controller fences broker 2
    # and drops it from every ISR before it restarts, and the run is held open meanwhile.
    doc = lab_fault_run(lab, "kill-broker:2", "--fault-duration", "12",
                        "--expect", "at-least-once")
    assert [e["detail"] for e in events_of(doc, "fault")] == ["SIGKILL broker 2"]
    assert [e["detail"] for e in events_of(doc, "heal")] == ["broker 2 restarted"]
    assert doc["settings"]["faults"] == ["kill-broker:2"]
    # Broker 2 is a replica of every partition (RF 3 on 3 brokers): the ISR shows it go.
    assert any("2" not in e["detail"].split("->")[1] for e in events_of(doc, "isr-change"))


def test_bounce_leader_chases_the_leader_n_times(lab: Lab, restore_brokers: None) -> None:
    # The run is held open until both rounds are done, however slow a restart is: a short
    # run still gets every bounce it asked for.
    doc = lab_fault_run(lab, "bounce-leader:2", "--fault-duration", "4",
                        "--expect", "at-least-once", count=12000, fault_at="50%")
    faults = [e["detail"] for e in events_of(doc, "fault")]
    assert [f.split(":")[0] for f in faults] == ["bounce 1/2", "bounce 2/2"], \
        (faults, doc["notes"], doc["events"])
    killed = [f.split()[-1] for f in faults]
    heals = [e["detail"] for e in events_of(doc, "heal")]
    assert heals == [f"broker {b} restarted" for b in killed]
    # Each round kills whoever leads partition 0 at that moment (the same broker again
    # when leadership went back to it); the kills show in partition 0's leadership.
    assert any(e["partition"] == 0 for e in events_of(doc, "leader-change"))


def test_exec_and_exec_heal_run_their_commands_in_order(lab: Lab, tmp_path: Path) -> None:
    fault_mark, heal_mark = tmp_path / "fault", tmp_path / "heal"
    code, doc, stderr = probe(
        lab, "--count", "6000", "--rate", "2000", "--expect", "exactly-once",
        "--fault", f"exec:'touch {fault_mark}'", "--fault", f"exec-heal:'touch {heal_mark}'",
        "--fault-at", "20%", "--fault-duration", "1")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert fault_mark.exists() and heal_mark.exists()
    kinds = [(e["kind"], e["detail"]) for e in doc["events"]
             if e["kind"] in ("fault", "heal")]
    assert kinds == [("fault", "exec command exited 0"),
                     ("heal", "exec heal command exited 0")], kinds
    assert doc["settings"]["faults"] == ["exec", "exec-heal"]  # commands are not echoed
    assert str(tmp_path) not in json.dumps(doc)
    assert doc["lost"] == 0 and doc["duplicated"] == 0 and doc["sent"] == doc["acked"] == 6000
    assert not doc["live_verification"]


def test_a_run_that_ends_before_its_fault_at_says_the_fault_never_struck(
        lab: Lab, tmp_path: Path) -> None:
    mark = tmp_path / "fault"
    code, doc, stderr = probe(lab, "--count", "200", "--fault", f"exec:'touch {mark}'",
                              "--fault-at", "600s")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert not mark.exists() and not events_of(doc, "fault"), doc["events"]
    assert "exec: never struck: the run ended before --fault-at 600s" in doc["notes"], \
        doc["notes"]


def test_exec_heal_without_exec_is_a_usage_error(lab: Lab) -> None:
    code, _, stderr = probe(lab, "--count", "10", "--fault", "exec-heal:'true'")
    assert code == 2 and "exec-heal" in stderr


def test_records_deleted_behind_the_probes_back_are_lost(lab: Lab, tmp_path: Path) -> None:
    topic = f"probe-del-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "delete_records.py"
    script.write_text(
        "import sys\n"
        "from confluent_kafka import TopicPartition\n"
        "from confluent_kafka.admin import AdminClient\n"
        "bootstrap, topic = sys.argv[1:3]\n"
        "admin = AdminClient({'bootstrap.servers': bootstrap})\n"
        # A fixed offset, not the high watermark: a slow start of this script under load
        # must not delete records written after it was started.
        "tp = TopicPartition(topic, 0, 5000)\n"
        "admin.delete_records([tp])[tp].result(30)\n")
    code, doc, _ = probe(
        lab, "--topic", topic, "--partitions", "1", "--count", "20000", "--rate", "4000",
        "--fault", f"exec:'{sys.executable} {script} {lab.bootstrap} {topic}'",
        "--fault-at", "50%", "--fault-duration", "0", "--expect", "at-least-once")
    assert code == 1
    assert doc["lost"] > 0 and doc["lost"] < 20000
    assert doc["acked"] == 20000  # every write was acknowledged; the log lost them later
    assert any(v.startswith("lost:") for v in doc["violations"])
    assert doc["samples"]["lost"][0]["partition"] == 0
    assert any(e["kind"] == "fault" and "exec" in e["detail"] for e in doc["events"])
    # Every loss has its cause: below the log start offset the delete left (5000).
    causes = doc["lost_causes"]
    assert (causes["deleted"], causes["truncated"], causes["unknown"]) == (doc["lost"], 0, 0)
    assert causes["partitions"][0]["log_start"] == 5000
    assert causes["partitions"][0]["deleted_offsets"][1] < 5000
    lost_line = next(v for v in doc["violations"] if v.startswith("lost:"))
    assert f"{doc['lost']} deleted below the log start offset" in lost_line
    # A deletion needs no leader epochs: none is asked for, none is said missing.
    part = causes["partitions"][0]
    assert (part["acked_epochs"], part["epoch_asked"], part["epoch_end_offset"],
            part["epoch_end_unread"]) == (None, None, None, None)
    assert "epoch" not in lost_line


def test_records_deleted_while_read_live_are_still_lost(lab: Lab) -> None:
    """No fault: the probe reads while it writes. Records it already read are then
    deleted behind its back; the live pass is set aside and the log read again."""
    import subprocess
    import time

    from confluent_kafka import Consumer, TopicPartition

    topic = f"probe-live-del-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "probe", "-b", lab.bootstrap, "--topic", topic,
         "--partitions", "1", "--count", "20000", "--rate", "4000", "--expect",
         "at-least-once", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    watcher = Consumer({"bootstrap.servers": lab.bootstrap, "group.id": "probe-test-watch"})
    try:
        deadline = time.monotonic() + 120
        while True:  # until the probe has written (and its live pass read) 6000 records
            assert proc.poll() is None and time.monotonic() < deadline, "probe ended early"
            try:
                high = watcher.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1]
            except Exception:  # the topic is not there yet
                high = 0
            if high >= 6000:
                break
            time.sleep(0.2)
        tp = TopicPartition(topic, 0, -1)  # -1: up to the high watermark
        delete_records_before(lab, tp)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        watcher.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, stderr
    doc = json.loads(stdout)
    assert not doc["live_verification"]
    assert any("records were deleted from partition(s) 0" in n for n in doc["notes"])
    assert doc["acked"] == 20000 and 6000 <= doc["lost"] < 20000
    assert any(v.startswith("lost:") for v in doc["violations"])
    assert (doc["lost_causes"]["deleted"], doc["lost_causes"]["unknown"]) == (doc["lost"], 0)
    assert doc["lost_causes"]["truncated"] == 0


def test_transactions_with_aborts_hide_aborted_messages(lab: Lab) -> None:
    code, doc, stderr = probe(lab, "--transactional", "--count", "6000", "--txn-size", "200",
                              "--abort-ratio", "0.25", "--expect", "exactly-once")
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["aborted"] > 0
    assert doc["aborted_visible"] == 0 and doc["lost"] == 0 and doc["duplicated"] == 0


def test_existing_topic_is_probed_without_mixing_up_other_data(lab: Lab) -> None:
    topic = create_topic(lab, partitions=2, rf=3, **{"min.insync.replicas": "2"})
    assert produce(lab, topic, 500)[0] == 500  # someone else's data
    code, doc, stderr = probe(lab, "--topic", topic, "--existing", "--count", "3000")
    assert code == 0, stderr
    assert doc["sent"] == doc["acked"] == 3000 and doc["lost"] == 0 and doc["unexpected"] == 0
    assert topic_exists(lab, topic)  # an existing topic is never deleted


def test_existing_topic_is_not_reused_without_existing(lab: Lab) -> None:
    topic = create_topic(lab, partitions=1, rf=1)
    code, _, stderr = probe(lab, "--topic", topic, "--count", "10")
    assert code == 2 and "--existing" in stderr


def test_missing_topic_with_existing_and_bad_options(lab: Lab) -> None:
    name = f"nope-{uuid.uuid4().hex[:8]}"
    code, _, stderr = probe(lab, "--topic", name, "--existing", "--count", "10")
    assert code == 2 and "does not exist" in stderr
    assert not topic_exists(lab, name)  # looking must not auto-create it
    assert probe(lab, "--fault", "kill-everything")[0] == 2
    assert probe(lab, "--fault-at", "soon", "--fault", "kill-leader")[0] == 2
    assert probe(lab, "--count", "5", "--duration", "5")[0] == 2


def test_unreachable_cluster_is_exit_3() -> None:
    result = run_kaudit("probe", "-b", "127.0.0.1:1", "--timeout", "2", "--count", "10")
    assert result.code == 3 and "cannot reach Kafka" in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_still_verifies_reports_cleans_up_and_exits_130(lab: Lab,
                                                               sig: signal.Signals) -> None:
    # SIGTERM (a CI job cancelled, a container stopped) killed the run outright: the probe
    # topic stayed and no report was written. It is now taken as Ctrl-C is.
    import os
    import subprocess

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    topic = f"kaudit-ctrlc-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "probe", "-b", lab.bootstrap, "--topic", topic,
         "--duration", "60", "--rate", "2000", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def written() -> int:
        # Interrupt mid-run, not before the first send: on a slow machine start-up alone
        # (imports, topic creation, leaders) can take seconds.
        try:
            # Metadata first: asked for a topic it has not seen, the admin client would go
            # on answering "no leaders found" from its cache.
            if topic not in admin(lab).list_topics(timeout=5).topics:
                return 0
            futures = admin(lab).list_offsets({TopicPartition(topic, 0): OffsetSpec.latest()},
                                              request_timeout=5)
            return sum(f.result(timeout=10).offset for f in futures.values())
        except Exception:  # the topic is being created
            return 0

    doc = json.loads(interrupt_when(proc, lambda: written() >= 1000, wait=120, sig=sig))
    assert doc["interrupted"] and doc["sent"] > 0 and doc["lost"] == 0
    assert doc["sent"] == doc["acked"] + doc["failed"] + doc["indeterminate"]
    assert doc["topic_deleted"]
    assert_topic_gone(lab, doc["topic"])


def test_matrix_prints_one_row_per_configuration(lab: Lab) -> None:
    # What each configuration loses or duplicates under a fault is `probe prove`'s to show
    # (below); this is the grid itself: one row per cell, each with its run.
    result = run_kaudit("probe", "matrix", "-b", lab.bootstrap, "--format", "json",
                        "--acks", "1,all", "--idempotence", "off", "--fault", "none",
                        "--count", "2000", timeout=300)
    assert result.code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert [(r["acks"], r["idempotence"], r["fault"]) for r in rows] == [
        ("1", False, None), ("all", False, None)]
    assert all(r["sent"] == r["acked"] == 2000 and r["lost"] == 0 and r["trials"] == 1
               for r in rows)


def test_a_run_with_nothing_acknowledged_is_inconclusive(lab: Lab) -> None:
    code, doc, stderr = probe(lab, "--message-size", "1048576", "--count", "50")
    assert code == 1, stderr
    assert (doc["acked"], doc["verdict"]) == (0, "inconclusive")
    assert doc["send_errors"] == {"MSG_SIZE_TOO_LARGE": 50}
    assert doc["violations"][1].startswith("MSG_SIZE_TOO_LARGE x50: permanent, a "
                                           "--message-size of 1048576 bytes")


def test_prove_confirms_every_claim_every_run(lab: Lab, restore_brokers: None) -> None:
    # The consumer half (--only consumer) is test_probe_consume.py's. --timeout 30: after a
    # killed leader, the evidence of a loss (the log's start and end) is read once a new
    # leader answers, which on a machine busy with other labs took longer than the default
    # 10 s (every acks=1 loss then "unknown"); every wait is still a bounded condition.
    result = run_kaudit("probe", "prove", "--only", "producer", "-b", lab.bootstrap,
                        "--lab-state-dir", lab.state_dir, "--format", "json",
                        "--timeout", "30", timeout=900)
    assert result.stdout, (result.code, result.stderr)  # an error, not a report
    doc = json.loads(result.stdout)
    unconfirmed = [(r["claim"], r["observed"]) for r in doc["rows"]
                   if r["verdict"] != "CONFIRMED"]
    assert result.code == 0 and not unconfirmed, (unconfirmed, result.stderr)
    assert len(doc["rows"]) == 11 and doc["verdict"] == "confirmed"
    runs = doc["runs"]
    # Each schedule's outcome, as it happens on every run (no trials to hope for it):
    assert runs["acks0"]["lost"] > 0
    assert runs["acks1"]["lost"] > 0 and runs["acks1"]["read_then_lost"] == 0
    # The acks=1 loss is a truncation: the log cut below offsets the old leader had
    # acknowledged, the offsets written again or past the log's end.
    causes = runs["acks1"]["lost_causes"]
    assert (causes["truncated"], causes["deleted"], causes["unknown"]) == (
        runs["acks1"]["lost"], 0, 0), (causes, runs["acks1"]["notes"])
    assert runs["acks1"]["read_then_lost_causes"] is None
    # ... placed in leader epochs. The new leader starts its epoch at its own log end, so
    # on its log the epoch the lost records were written in (or, when the client did not
    # report it, that of the last record kept below them: a log's epochs only grow) ends at
    # the first offset the old leader had and it did not: every lost offset is at or above.
    truncated = [p for p in causes["partitions"] if p["truncated"]]
    assert truncated
    for part in truncated:
        lowest = part["truncated_offsets"][0]
        assert part["epoch_end_unread"] is None, part
        assert part["epoch_end_offset"] is not None and part["epoch_end_offset"] <= lowest, part
        if part["acked_epochs"] is None:
            assert part["kept_below"]["offset"] < lowest, part
            assert part["epoch_asked"] == part["kept_below"]["leader_epoch"], part
        else:
            assert part["epoch_asked"] == part["acked_epochs"][0], part
        assert part["epoch_on_leader"] == part["epoch_asked"] and part["leader"] >= 0, part
    assert runs["acksall"]["lost"] == 0
    assert runs["isr1-unclean"]["lost"] > 0
    details = [e["detail"] for e in runs["isr1-unclean"]["events"]]
    assert any(d.startswith("restarted stale follower") for d in details), details
    assert runs["isr1-clean"]["lost"] == 0 and runs["isr1-clean"]["unavailable_seconds"] > 0
    assert runs["retries"]["duplicated"] > 0
    assert runs["idempotent"]["duplicated"] == 0 and runs["idempotent"]["reordered"] == 0
    assert runs["idempotent-restart"]["duplicated"] > 0
    assert runs["txn-restart"]["duplicated"] == 0 and runs["txn-restart"]["lost"] == 0
    assert runs["txn-aborts"]["aborted"] > 0 and runs["txn-aborts"]["aborted_visible"] == 0
    assert all(run["acked"] > 0 for run in runs.values())


def test_a_fenced_transactional_probe_stops_sending_and_accounts_for_what_it_sent(
        lab: Lab) -> None:
    """A producer of our own takes the probe's transactional id: the probe's producer is
    fenced (a fatal error: it can send nothing more). The run ends its sends there and
    still reports every message it sent; the sends of a transaction the fence cut have no
    known outcome (indeterminate), never a loss. (Where the fence lands, in a transaction
    or between two, is the lab's timing: both end the same way.)"""
    import subprocess

    from confluent_kafka import Producer

    from tests.integration.test_canary import canary_run_id

    topic = f"kaudit-test-fenced-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "probe", "-b", lab.bootstrap, "--format", "json",
         "--topic", topic, "--transactional", "--txn-size", "50", "--rate", "200",
         "--duration", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")},
        stdin=subprocess.DEVNULL)
    try:
        run_id = canary_run_id(lab, topic)  # the probe's records carry it the same way
        fencer = Producer({"bootstrap.servers": lab.bootstrap,
                           "transactional.id": f"kaudit-probe-{run_id}"})
        fencer.init_transactions(30)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert stdout.strip(), stderr  # a report, not an internal error
    doc = json.loads(stdout)
    assert any("fenced" in note.lower() for note in doc["notes"]), (doc["notes"], stderr)
    assert 0 < doc["sent"] < 200 * 60, doc["sent"]  # the sends ended at the fence
    assert doc["lost"] == doc["duplicated"] == doc["aborted_visible"] == 0, doc
    assert doc["acked"] > 0, doc
    assert doc["sent"] == doc["acked"] + doc["failed"] + doc["indeterminate"], doc


def test_restart_producer_between_two_transactions_resends_nothing_committed(
        lab: Lab, restore_brokers: None) -> None:
    # One message per transaction: the restart almost always lands between a commit and
    # the next begin. The new session must not send the committed transaction again (a
    # CI run of `probe prove` once found 500 duplicates: a whole committed transaction).
    code, doc, stderr = probe(lab, "--transactional", "--txn-size", "1", "--count", "200",
                              "--partitions", "1", "--fault", "restart-producer",
                              "--fault-at", "30%", "--lab-state-dir", lab.state_dir)
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert (doc["acked"], doc["lost"], doc["duplicated"]) == (200, 0, 0)
    assert any("new producer session" in e["detail"] for e in doc["events"])


def _reader_processes() -> list[int]:
    """This process's children that run the read-back reader (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        if ppid == os.getpid() and b"kaudit.probe.reader" in cmdline:
            found.append(int(entry.name))
    return found


def _probe_in_process(lab: Lab, monkeypatch: pytest.MonkeyPatch, count: int,
                      display: Any = None) -> Any:
    """A probe run in this process, its live pass read by a reader process of its own
    (the size that earns one lowered to this run's)."""
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.probe import runner
    from kaudit.probe.model import ProbeSettings

    monkeypatch.setattr(runner, "SEPARATE_READER_FROM", count)
    settings = ProbeSettings(count=count, expect="exactly-once", e2e_latency=False)
    return runner.run_probe(ConnectionSettings(lab.bootstrap), settings, display=display)


def test_a_reader_process_of_its_own_reads_the_live_pass(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[int]] = []
    report = _probe_in_process(lab, monkeypatch, 30000,
                               lambda sent, share, done: seen.append(_reader_processes()))
    result = report.verification
    assert (result.sent, result.acked, result.lost, result.duplicated) == (30000, 30000, 0, 0)
    assert report.verdict == "pass" and report.live_verification and not report.notes
    assert any(len(pids) == 1 for pids in seen), seen  # it ran beside the send loop
    assert _reader_processes() == []  # and it is gone


def test_a_reader_process_that_dies_sets_the_live_pass_aside(
        lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    killed: list[int] = []

    def kill_reader(sent: int, share: float, done: bool) -> None:
        for pid in _reader_processes() if not killed else []:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    report = _probe_in_process(lab, monkeypatch, 30000, kill_reader)
    assert killed
    result = report.verification
    # Pass 1 read the topic again in this process: every message still accounted for.
    assert (result.sent, result.acked, result.lost, result.duplicated) == (30000, 30000, 0, 0)
    assert report.verdict == "pass" and not report.live_verification
    (note,) = report.notes
    # (its last stderr line follows the exit code: none from a SIGKILL, unless the client
    # had logged something before it)
    assert note.startswith("the live read-back pass was set aside (the read-back process "
                           "ended with exit code -9: ") and note.endswith(
        "; pass 1 read the topic again after the run"), note
