"""``kaudit probe share`` on the lab: every record's fate under each acknowledgement
treatment, and a worker killed while it holds locks; the account checked against the
brokers' own view of the group and a plain read of the topic."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kaudit.cluster.client import AdminSession, TopicCollection
from kaudit.cluster.protocol_share import share_state_key
from kaudit.cluster.share_admin import group_coordinator, share_coordinator
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.share.verify import Mix, Treatment, treatment
from tests.conftest import Lab, heal_lab, run_kaudit
from tests.integration.test_lab import admin, wait_until
from tests.integration.test_share_groups import share_group_command, share_state

pytestmark = [pytest.mark.kafka, pytest.mark.probe]


@pytest.fixture(autouse=True)
def _leaders_where_kafka_wants_them(lab: Lab) -> None:
    """Every partition led by its preferred replica before a run. Earlier tests kill and
    restart brokers; Kafka's periodic rebalance then moves leaders back (the share and
    group coordinators too) at a moment of its choosing. These tests assert exact fates:
    the move is made before the run, never during it."""
    import contextlib

    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as ConfluentTopicPartition

    client = admin(lab)

    def misplaced() -> list[Any]:
        topics = client.list_topics(timeout=10).topics
        return [ConfluentTopicPartition(t, p) for t, meta in topics.items()
                for p, part in meta.partitions.items()
                if part.replicas and part.leader != part.replicas[0]
                and part.replicas[0] in part.isrs]

    def settled() -> bool:
        moving = misplaced()
        if moving:
            with contextlib.suppress(Exception):
                client.elect_leaders(ElectionType.PREFERRED, moving).result(timeout=10)
        return not moving

    wait_until(settled, 90, "every partition led by its preferred replica")


def _probe(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    run = run_kaudit("probe", "share", "-b", lab.bootstrap, "--format", "json", "--keep",
                     *args, timeout=400)
    assert run.code in (0, 1), run.stderr
    return run.code, json.loads(run.stdout), run.stderr


def _kinds(count: int, mix: Mix) -> dict[Treatment, int]:
    kinds = [treatment(s, mix) for s in range(count)]
    return {k: kinds.count(k) for k in Treatment}


def _cleanup(lab: Lab, doc: dict[str, Any]) -> None:
    """Delete what a --keep run kept: its topic and its journals."""
    admin(lab).delete_topics([doc["topic"]])
    for note in doc["notes"]:
        if note.startswith("kept: "):
            shutil.rmtree(note.rsplit("journals in ", 1)[1], ignore_errors=True)


def test_each_treatment_ends_as_it_must_and_the_brokers_agree(lab: Lab) -> None:
    mix = Mix(release=0.1, reject=0.05, poison=0.03)
    code, doc, err = _probe(lab, "--count", "300", "--release", "0.1", "--reject", "0.05",
                            "--poison", "0.03", "--delivery-limit", "3",
                            "--expect", "at-least-once")
    try:
        kinds = _kinds(300, mix)
        assert code == 0, (doc["violations"], err)
        assert doc["settled"] and doc["delivery_limit"] == 3
        assert doc["fates"] == {
            "processed": kinds[Treatment.accept] + kinds[Treatment.release],
            "processed_twice": 0, "rejected": kinds[Treatment.reject],
            "archived": kinds[Treatment.poison], "never_delivered": 0, "unsettled": 0}
        poison = [r for r in doc["records"] if r["treatment"] == "poison"]
        assert len(poison) == kinds[Treatment.poison]
        assert all(r["fate"] == "archived" and r["deliveries"] == 3 for r in poison)
        # The brokers are done with every record of the group: nothing left to deliver.
        rows = share_group_command(lab, doc["group"], "--offsets")
        assert rows and all(row[4] == "0" for row in rows), rows
    finally:
        _cleanup(lab, doc)


def test_a_killed_workers_records_come_back_and_exactly_once_says_why_not(lab: Lab) -> None:
    # One partition that both workers share: the killed worker's records come back as its
    # connections close, not after the group's session timeout (45 s by default).
    # Without --keep: the topic and the journals go at the end, the kill notwithstanding.
    before = set(Path(tempfile.gettempdir()).glob("kaudit-share-*"))
    run = run_kaudit("probe", "share", "-b", lab.bootstrap, "--format", "json", "--count",
                     "200", "--workers", "2", "--partitions", "1", "--kill-worker",
                     "--hold-after", "10", "--lock-ms", "15000", "--expect", "exactly-once",
                     timeout=400)
    code, doc, err = run.code, json.loads(run.stdout), run.stderr
    assert code == 1, (doc, err)
    assert doc["topic_deleted"], doc
    assert set(Path(tempfile.gettempdir()).glob("kaudit-share-*")) == before
    (killed,) = doc["killed"]
    worker = killed.split(":")[0]  # whichever got the records first
    assert killed == f"{worker}: SIGKILLed while it held its records' locks"
    assert doc["settled"] and doc["fates"]["never_delivered"] == 0
    twice = [r for r in doc["records"] if r["fate"] == "processed_twice"]
    # It held the 10 it had processed: each came back and was processed again.
    assert len(twice) == 10, doc["fates"]
    assert all(r["why"].startswith(f"{worker} processed it (delivery 1) and was "
                                   "SIGKILLed while it held its records' locks before "
                                   "its acceptance was committed") for r in twice), twice
    # Not lost: every record was processed, once or (those the killed worker had in
    # hand) twice.
    assert doc["fates"]["processed"] + len(twice) == 200
    assert doc["violations"] == [f"{len(twice)} record(s) processed 2 times "
                                 f"(e.g. record {twice[0]['seq']})"]


def _java_hash(text: str) -> int:
    """Java's String.hashCode (the share coordinator's key hash)."""
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def test_a_worker_past_its_lock_processes_twice_and_the_lookups_agree_with_kafka(
        lab: Lab) -> None:
    # One partition that both workers share; a lock of 2 s (the lab lets it be 1 s).
    code, doc, err = _probe(lab, "--count", "100", "--workers", "2", "--partitions", "1",
                            "--slow-worker", "--hold-after", "10", "--lock-ms", "2000",
                            "--expect", "exactly-once")
    try:
        assert code == 1, (doc, err)
        assert doc["settled"] and doc["fates"]["never_delivered"] == 0
        twice = [r for r in doc["records"] if r["fate"] == "processed_twice"]
        held = [r for r in twice if "held it past its lock" in r["why"]]
        # The held record (the slow worker's 10th processing) came back to the other
        # worker, which answered for it only after the late acknowledgement was refused.
        # The slow worker commits the rest of its batch before it holds; on a starved host
        # those locks can run out as well: each such acknowledgement was refused for what
        # it was.
        # As text, so that pytest shows it whole: every why, one a line.
        assert len(held) == 1, "\n".join(r["why"] for r in twice)
        assert held[0]["why"].endswith("then its acceptance failed: INVALID_RECORD_STATE "
                                       "(the record was no longer its to acknowledge: its "
                                       "lock had expired)"), held
        odd = [r["why"] for r in twice if r not in held and not r["why"].endswith(
            "its acceptance failed: INVALID_RECORD_STATE (the record was no longer its to "
            "acknowledge: its lock had expired): the broker delivered it again")]
        assert not odd, "\n".join(odd)
        assert doc["fates"]["processed"] + len(twice) == 100
        assert sum(t["redelivered"] for t in doc["timeline"]) == len(twice)
        assert share_state(lab, doc["group"])[0][1] == 0  # nothing left to deliver
        # The coordinators the faults aim at, found as Kafka's own tool and hash find them.
        session = AdminSession(ConnectionSettings(lab.bootstrap))
        (state,) = share_group_command(lab, doc["group"], "--state")
        assert f"({group_coordinator(session, doc['group'])})" in state, state
        topic_id = str(session.wait(session.admin.describe_topics(
            TopicCollection([doc["topic"]]))[doc["topic"]]).topic_id)
        key = share_state_key(doc["group"], topic_id, 0)
        meta = session.list_topics().topics["__share_group_state"].partitions
        hashed = abs(_java_hash(key)) % len(meta)
        assert share_coordinator(session, doc["group"], doc["topic"], 0) == \
            meta[hashed].leader
    finally:
        _cleanup(lab, doc)


@pytest.mark.parametrize("fault,target", [
    ("kill-coordinator", "coordinator"), ("kill-share-coordinator", "share-coordinator")])
def test_a_broker_killed_under_the_group_loses_nothing_and_each_duplicate_says_why(
        lab: Lab, fault: str, target: str) -> None:
    # On three brokers each leads one of the topic's three partitions: whichever the fault
    # aims at, a share-partition's leader goes too, with the records in the workers' hands
    # (kill-leader's own aim is the one probe and probe consume prove).
    code, doc, err = _probe(lab, "--count", "300", "--processing-ms", "10",
                            "--fault", fault, "--fault-at", "30%", "--fault-duration", "0",
                            "--lab-state-dir", lab.state_dir, "--expect", "at-least-once")
    try:
        assert code == 0, (doc["violations"], doc["notes"], err)
        assert doc["settled"] and doc["fates"]["never_delivered"] == 0
        # A run whose fault never struck (seen once in CI): what the run said, to see why.
        assert len(doc["events"]) == 2, json.dumps(
            {k: doc.get(k) for k in ("events", "notes", "fates", "seconds", "timeline")})[:4000]
        (struck, healed) = doc["events"]
        assert struck["kind"] == "fault" and healed["kind"] == "heal", doc["events"]
        broker = struck["detail"].removeprefix(f"SIGKILL {target} ")
        assert healed["detail"] == f"broker {broker} restarted"
        # Every record processed; those processed again each say what their first
        # processing's acceptance met (Kafka's error, or no answer).
        twice = [r for r in doc["records"] if r["fate"] == "processed_twice"]
        assert doc["fates"]["processed"] + len(twice) == 300
        assert all(r["why"].startswith("worker ") for r in twice), twice
        state = share_state(lab, doc["group"])  # nothing left to deliver, by the broker
        assert sorted(state) == [0, 1, 2] and all(lag == 0 for _, lag in state.values()), state
    finally:
        heal_lab(lab)
        _cleanup(lab, doc)


def test_probe_prove_confirms_every_share_claim_on_its_own_short_schedule(lab: Lab) -> None:
    run = run_kaudit("probe", "prove", "--only", "share", "-b", lab.bootstrap,
                     "--lab-state-dir", lab.state_dir, "--format", "json", timeout=600)
    doc = json.loads(run.stdout)
    # As text, so that pytest shows it whole: which claim failed, its evidence, the notes.
    failed = [r for r in doc["rows"] if r["verdict"] != "CONFIRMED"]
    assert run.code == 0, json.dumps({
        "rows": failed, "runs": {n: doc["runs"][n] for r in failed for n in r["runs"]},
        "stderr": run.stderr[-2000:]}, indent=1)
    assert [r["runs"] for r in doc["rows"]] == [["share-kill"], ["share-poison"],
                                                ["share-slow"], ["share-latest"]]
    assert all(r["verdict"] == "CONFIRMED" for r in doc["rows"])
    runs = doc["runs"]
    assert runs["share-kill"]["lost"] == 0 and runs["share-kill"]["duplicated"] > 0
    assert runs["share-slow"]["duplicated"] > 0
    assert runs["share-latest"]["lost"] >= 100  # all written before it, and late ones
