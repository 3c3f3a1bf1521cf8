"""Share groups from their coordinator's answers: members, assignments, share-partitions
and what the coordinator refused (the messages' layouts are proven against a real broker,
and against Kafka's own kafka-share-groups.sh, in tests/integration/test_share_groups.py)."""

from __future__ import annotations

import uuid

import pytest

from kaudit.cluster.model import ShareMember, SharePartition
from kaudit.cluster.protocol_share import messages, share_groups


def _described() -> object:
    D = messages().ShareGroupDescribeResponse
    G, M = D.DescribedGroup, D.DescribedGroup.Member
    A, TP = M.Assignment, M.Assignment.TopicPartitions
    member = M(member_id="m-2", rack_id=None, member_epoch=4, client_id="w1",
               client_host="/127.0.0.1", subscribed_topic_names=["orders"],
               assignment=A(topic_partitions=[TP(topic_id=uuid.uuid4(), topic_name="orders",
                                                 partitions=[2, 0])]))
    idle = M(member_id="m-1", rack_id=None, member_epoch=1, client_id="w0",
             client_host="/10.0.0.9", subscribed_topic_names=["orders"],
             assignment=A(topic_partitions=[]))
    response = D(throttle_time_ms=0, groups=[
        G(error_code=0, error_message=None, group_id="billing", group_state="Stable",
          group_epoch=7, assignment_epoch=7, assignor_name="simple", members=[member, idle],
          authorized_operations=-2147483648),
        G(error_code=30, error_message="denied", group_id="secret", group_state="",
          group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[],
          authorized_operations=-2147483648)])
    return D.decode(response.encode(version=1), version=1)


def _offsets(version: int) -> object:
    R = messages().DescribeShareGroupOffsetsResponse
    G = R.DescribeShareGroupOffsetsResponseGroup
    T, P = G.DescribeShareGroupOffsetsResponseTopic, \
        G.DescribeShareGroupOffsetsResponseTopic.DescribeShareGroupOffsetsResponsePartition
    parts = [P(partition_index=2, start_offset=40, leader_epoch=0, lag=5, error_code=0,
               error_message=None),
             P(partition_index=0, start_offset=-1, leader_epoch=-1, lag=-1, error_code=0,
               error_message=None),
             P(partition_index=1, start_offset=0, leader_epoch=0, lag=0, error_code=29,
               error_message=None)]
    response = R(throttle_time_ms=0, groups=[
        G(group_id="billing", topics=[T(topic_name="orders", topic_id=uuid.uuid4(),
                                        partitions=parts)],
          error_code=0, error_message=None)])
    return R.decode(response.encode(version=version), version=version)


def test_members_sorted_with_their_assignment_and_the_host_as_kafka_prints_it() -> None:
    billing, secret = share_groups(_described(), _offsets(1), coordinator=2)
    assert (billing.group_id, billing.state, billing.coordinator) == ("billing", "Stable", 2)
    assert (billing.group_epoch, billing.assignment_epoch) == (7, 7)
    assert billing.members == (
        ShareMember(member_id="m-1", client_id="w0", host="10.0.0.9", member_epoch=1,
                    subscribed=("orders",), assignment=()),
        ShareMember(member_id="m-2", client_id="w1", host="127.0.0.1", member_epoch=4,
                    subscribed=("orders",), assignment=(("orders", (0, 2)),)))
    assert secret.state == "Unknown" and secret.unread == "described: GROUP_AUTHORIZATION_FAILED"


@pytest.mark.parametrize("version", [0, 1])
def test_share_partitions_with_no_state_no_lag_and_a_refused_one(version: int) -> None:
    billing = share_groups(_described(), _offsets(version), coordinator=2)[0]
    lag = 5 if version else None  # Kafka 4.1 (v0) gives no lag
    assert billing.partitions == (
        SharePartition(topic="orders", partition=0, start_offset=None, leader_epoch=None,
                       lag=None),
        SharePartition(topic="orders", partition=2, start_offset=40, leader_epoch=0, lag=lag))
    assert billing.unread == "offsets of orders-1: TOPIC_AUTHORIZATION_FAILED"


_BOTH_AT_ONCE = """
import socket, threading
from kaudit.cluster.model import Broker
from kaudit.cluster.protocol import read_protocol
from kaudit.cluster.protocol_share import read_share_groups
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline

silent = socket.socket()  # accepts connections (the backlog) and never answers
silent.bind(("127.0.0.1", 0))
silent.listen(8)
brokers = (Broker(id=1, host="127.0.0.1", port=silent.getsockname()[1]),)
settings, said = ConnectionSettings(f"127.0.0.1:{brokers[0].port}"), []
reads = [lambda: said.append(str(read_protocol(settings, brokers, ["t"], Deadline(2)))),
         lambda: said.append(str(read_share_groups(settings, brokers, Deadline(2))))]
threads = [threading.Thread(target=r) for r in reads]
for t in threads:
    t.start()
for t in threads:
    t.join(10)
print(said)
"""


def test_the_share_and_feature_reads_start_side_by_side_in_a_fresh_process() -> None:
    """Each enters kafka-python by another module; in threads, at once, in a process that
    had not imported it, they deadlocked on the import locks (ImportError, a broker's
    reads lost) until it is imported whole before the threads start."""
    import subprocess
    import sys

    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", _BOTH_AT_ONCE], capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        assert "Error" not in run.stdout + run.stderr, run.stdout + run.stderr
        assert "gave no answer within 2s" in run.stdout
