"""DescribeQuorum's answer on the wire, in every version, as kaudit models it; the quorum in
a snapshot and back; and a quorum that cannot be read said so, within the deadline (the
read itself is proven on the lab: tests/integration/test_quorum_audit.py)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from kaudit.cluster.model import Broker, snapshot_from_dict, snapshot_to_dict
from kaudit.cluster.protocol_quorum import (
    NOT_AUTHORIZED,
    QuorumRefused,
    kafka_uuid,
    quorum_request,
    quorum_state,
    read_quorum,
)
from kaudit.cluster.quorum import (
    QUORUM_NOT_IN_SNAPSHOT,
    ControllerEndpoint,
    QuorumReplica,
    QuorumState,
)
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline
from tests.silent_broker import silent_broker

VOTER_DIR = uuid.UUID("1f4c589b-ad83-6206-1296-15ce61662eff")


def _response(version: int, *, error_code: int = 0, partition_error: int = 0) -> Any:
    """A DescribeQuorum response of three voters (100 leads, 102 never fetched) and one
    observer, through the wire at ``version``."""
    from kafka.protocol.admin import DescribeQuorumResponse as Response

    Topic = Response.TopicData
    Partition = Topic.PartitionData
    State = Partition.ReplicaState
    voters = [State(replica_id=100, replica_directory_id=VOTER_DIR, log_end_offset=500,
                    last_fetch_timestamp=1_000_000, last_caught_up_timestamp=1_000_000),
              State(replica_id=101, replica_directory_id=uuid.UUID(int=0), log_end_offset=480,
                    last_fetch_timestamp=999_000, last_caught_up_timestamp=990_000),
              State(replica_id=102, replica_directory_id=uuid.UUID(int=0), log_end_offset=-1,
                    last_fetch_timestamp=-1, last_caught_up_timestamp=-1)]
    observers = [State(replica_id=1, replica_directory_id=VOTER_DIR, log_end_offset=500,
                       last_fetch_timestamp=999_500, last_caught_up_timestamp=999_500)]
    response = Response(
        error_code=error_code, error_message=None, topics=[Topic(
            topic_name="__cluster_metadata", partitions=[Partition(
                partition_index=0, error_code=partition_error, error_message=None,
                leader_id=100, leader_epoch=7, high_watermark=499, current_voters=voters,
                observers=observers)])],
        nodes=[Response.Node(node_id=100, listeners=[Response.Node.Listener(
            name="CONTROLLER", host="127.0.0.1", port=9093)])])
    return Response.decode(response.encode(version=version), version=version)


def test_the_request_asks_for_the_metadata_logs_one_partition() -> None:
    from kafka.protocol.admin import DescribeQuorumRequest

    for version in (0, 1, 2):
        wire = DescribeQuorumRequest.decode(quorum_request().encode(version=version),
                                            version=version)
        assert [(t.topic_name, [p.partition_index for p in t.partitions])
                for t in wire.topics] == [("__cluster_metadata", [0])]


def test_v2_gives_everything_kafka_does() -> None:
    quorum = quorum_state(_response(2), answered_by=2)
    assert quorum == QuorumState(
        leader_id=100, leader_epoch=7, high_watermark=499,
        voters=(QuorumReplica(100, "H0xYm62DYgYSlhXOYWYu_w", 500, 1_000_000, 1_000_000),
                QuorumReplica(101, None, 480, 999_000, 990_000),
                QuorumReplica(102, None, None, None, None)),
        observers=(QuorumReplica(1, "H0xYm62DYgYSlhXOYWYu_w", 500, 999_500, 999_500),),
        endpoints=(ControllerEndpoint(100, "CONTROLLER", "127.0.0.1", 9093),),
        answered_by=2)
    assert quorum.leader == quorum.voters[0]
    assert quorum.failures_tolerated == 1


def test_older_versions_leave_out_what_they_do_not_carry() -> None:
    v1 = quorum_state(_response(1), answered_by=1)
    assert [v.directory_id for v in v1.voters] == [None, None, None]
    assert v1.voters[1].last_caught_up_ms == 990_000 and v1.endpoints == ()
    v0 = quorum_state(_response(0), answered_by=1)
    assert [(v.replica_id, v.log_end_offset, v.last_fetch_ms, v.last_caught_up_ms)
            for v in v0.voters] == [(100, 500, None, None), (101, 480, None, None),
                                   (102, None, None, None)]


@pytest.mark.parametrize(("where", "code", "said"), [
    ("top", 31, NOT_AUTHORIZED),  # CLUSTER_AUTHORIZATION_FAILED
    ("partition", 6, "DescribeQuorum answered NOT_LEADER_FOR_PARTITION"),
])
def test_an_error_in_the_answer_is_refused_with_its_name(where: str, code: int,
                                                         said: str) -> None:
    response = _response(2, **({"error_code": code} if where == "top"
                               else {"partition_error": code}))
    with pytest.raises(QuorumRefused, match=said):
        quorum_state(response, answered_by=1)


def test_kafka_prints_uuids_as_unpadded_url_safe_base64() -> None:
    # As `kafka-metadata-quorum.sh describe --replication` printed this directory id.
    assert kafka_uuid(uuid.UUID("fdfd2d34-254d-7f41-1637-84c67baea1ba")) == \
        "_f0tNCVNf0EWN4TGe66hug"
    assert kafka_uuid(uuid.UUID(int=0)) is None and kafka_uuid(None) is None


def _snapshot_doc(**extra: Any) -> dict[str, Any]:
    return {"schema": "kaudit.snapshot/v1", "cluster_id": "c", "controller_id": 1,
            "taken_at": "2026-06-01T00:00:00+00:00", "brokers": [], "broker_configs": {},
            "topics": [], **extra}


def test_the_quorum_survives_a_snapshot_round_trip() -> None:
    quorum = quorum_state(_response(2), answered_by=2)
    snap = snapshot_from_dict(_snapshot_doc(quorum=None, quorum_unread="x"), "snapshot:f")
    from dataclasses import replace

    again = snapshot_from_dict(snapshot_to_dict(replace(snap, quorum=quorum,
                                                        quorum_unread=None)), "snapshot:f")
    assert again.quorum == quorum and again.quorum_unread is None
    unread = snapshot_from_dict(snapshot_to_dict(snap), "snapshot:f")
    assert unread.quorum is None and unread.quorum_unread == "x"


def test_a_snapshot_taken_before_the_quorum_was_read_says_so() -> None:
    snap = snapshot_from_dict(_snapshot_doc(), "snapshot:old.json")
    assert snap.quorum is None and snap.quorum_unread == QUORUM_NOT_IN_SNAPSHOT


def test_a_quorum_not_read_comes_back_with_why_within_the_deadline() -> None:
    with silent_broker() as broker:
        port = broker.port
        started = time.monotonic()
        read = read_quorum(ConnectionSettings(f"127.0.0.1:{port}"), [broker], Deadline(1.0))
        assert time.monotonic() - started < 5
    assert read.quorum is None
    assert read.unread == f"broker 1 (127.0.0.1:{port}) gave no answer within 1s"
    assert read_quorum(ConnectionSettings("h:1"), [], Deadline(1.0)).unread == \
        "no broker is registered"
    bad = read_quorum(ConnectionSettings("h:1", properties={
        "security.protocol": "CARRIER_PIGEON"}), [Broker(1, "h", 1)], Deadline(1.0))
    assert bad.unread is not None and "CARRIER_PIGEON" in bad.unread


def test_check_from_a_snapshot_file_judges_the_quorum_as_the_snapshot_itself(
        tmp_path: Any) -> None:
    """``kaudit snapshot`` then ``check --snapshot FILE``: the same quorum findings as the
    snapshot evaluated where it was read, in every format check writes."""
    import json
    from dataclasses import replace

    from kaudit.check.engine import evaluate
    from kaudit.check.policy.loader import load_policies
    from tests.conftest import run_in_process

    quorum = quorum_state(_response(2), answered_by=2)
    doc = _snapshot_doc(features={"metadata.version": "4.3-IV0", "kraft.version": "0"},
                        quorum=None)
    snap = replace(snapshot_from_dict(doc, "live"), quorum=quorum, quorum_unread=None)
    file = tmp_path / "snap.json"
    file.write_text(json.dumps(snapshot_to_dict(snap)))
    here = evaluate(snap, load_policies([]), [], [])
    wanted = [(f.rule, f.subject.name, f.message, f.expected, f.actual, f.source)
              for f in here.findings if f.rule.startswith("KA31")]
    # Voter 101 last caught up in 1970 by the snapshot's clock, 102 was never heard from;
    # and the quorum is static (warnings first).
    assert [w[0] for w in wanted] == ["KA315", "KA315", "KA312"]
    run = run_in_process("check", "--snapshot", str(file), "-f", "json")
    assert run.code == 0, run.stderr  # a warning and an info: no error
    offline = json.loads(run.stdout)
    assert [(f["rule"], f["subject"]["name"], f["message"], f["expected"], f["actual"],
             f["source"]) for f in offline["findings"] if f["rule"].startswith("KA31")] == wanted
    for fmt in ("table", "sarif", "junit", "github", "html"):
        shown = run_in_process("check", "--snapshot", str(file), "-f", fmt)
        assert shown.code == 0 and "KA315" in shown.stdout, (fmt, shown.stderr)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({k: v for k, v in snapshot_to_dict(snap).items()
                               if k not in ("quorum", "quorum_unread")}))
    table = run_in_process("check", "--snapshot", str(old), "-f", "table")
    assert f"controller quorum: not read ({QUORUM_NOT_IN_SNAPSHOT})" in \
        " ".join(table.stdout.split())  # the heading may be wrapped to the terminal
    assert "KA315" not in table.stdout and "KA312" in table.stdout
