"""The transactional strategy's output topic, read back as a read_committed reader sees it,
after the transactions a killed worker left open are fenced."""

from __future__ import annotations

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, new_consumer, new_producer
from kaudit.cluster.segments import SegmentReader
from kaudit.probe.consume.verify import Processing
from kaudit.waiting import Deadline


def fence_transactions(session: AdminSession, group: str, workers: list[int],
                       notes: list[str]) -> None:
    """Abort what a worker killed at the end left open: a new session with its
    transactional id fences it (as its restart would have), so the output's last stable
    offset is not held back until transaction.timeout.ms."""
    conn = session.settings
    for w in workers:
        producer = new_producer(conn, None, **{
            "transactional.id": f"{group}-w{w}", "enable.idempotence": True})
        try:
            producer.init_transactions(conn.timeout * 3)
        except client.KafkaException as exc:
            notes.append(f"could not fence worker {w}'s transactions: "
                         f"{client.kafka_message(exc)}")


def read_output(session: AdminSession, output: str, group: str, partitions: list[int],
                notes: list[str]) -> list[Processing]:
    """The output topic as a read_committed reader sees it: committed transactions only.

    ``session`` must be a fresh admin client: one that lived through a broker restart cached
    the leader epochs from before it, and librdkafka's ListOffsets sends them,
    FENCED_LEADER_EPOCH for ever."""
    conn = session.settings
    ends = session.list_offsets(output, partitions, "latest", read_committed=True)
    consumer = new_consumer(conn, None, **{
        "group.id": f"{group}-verify", "enable.auto.commit": False,
        "enable.partition.eof": True, "isolation.level": "read_committed"})
    # Done only at the last stable offset read above: a log end reported below it is not
    # the end of what was committed.
    out: list[Processing] = []
    try:
        reader = SegmentReader(consumer, output, {p: (0, ends[p]) for p in partitions},
                               done_at_log_end=False)
        for msg in reader.records(Deadline(max(60.0, conn.timeout * 6))):
            ip, io, w, i = (int(x) for x in msg.value().split())
            out.append(Processing(ip, io, w, i, msg.timestamp()[1] * 1_000_000))
    finally:
        consumer.close()
    pending = reader.left
    if pending:
        notes.append(f"output partitions {sorted(pending)} could not be read to their end")
    return out
