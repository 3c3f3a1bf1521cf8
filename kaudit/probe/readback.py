"""The read-back: consumer passes that feed the verifier, and the end-to-end latency tail.

Pass 1 may run live, while the producer writes, or after the run; a second, fresh pass
tells a consumer miss from log loss (:mod:`kaudit.probe.runner` decides which).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, new_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.epochs import EpochRuns
from kaudit.probe.latency import LatencyHistogram
from kaudit.probe.ledger import Ledger
from kaudit.probe.model import ProbeSettings
from kaudit.probe.monitor import EventLog
from kaudit.probe.payload import HEADER_SIZE, MAGIC, RUN_AND_SEQUENCE, VERSION, decode
from kaudit.probe.verifier import Verifier
from kaudit.waiting import Deadline

ACKS_0_QUIET_S = 2.0
"""acks=0: how long the log ends must stand still, short of what was sent, before the
read-back stops there (what is missing then was lost, as acks=0 allows)."""
END_QUIET_S = 3.0
"""Read-back: how long a partition's log must have ended short of its last acknowledged
offset, without growing, before the pass stops waiting for it."""
READ_BATCH = 4096
"""Most messages the live pass takes per turn: it keeps up without stalling the sends
(the client keeps sending its queue meanwhile)."""


def read_ends(session: AdminSession, settings: ProbeSettings, topic: str,
              partitions: list[int], starts: dict[int, int], ledger: Ledger
              ) -> dict[int, int]:
    """Where each partition's read-back may stop: past its end now and past its last
    acknowledged offset."""
    ends = session.list_offsets(topic, partitions, "latest",
                                 read_committed=settings.transactional)
    if settings.acks == "0":
        # acks=0 gets no offsets back, and flush() returns once the requests are sent,
        # maybe before the broker appended them; the high watermark then moves only as
        # followers fetch. Wait until every partition has grown by what was sent to it (it
        # cannot grow by less unless messages were lost), or has stopped moving for a while.
        wanted = {p: starts[p] + ledger.partition_counts(p)["acked"] for p in partitions}
        deadline, quiet = Deadline(session.settings.timeout), Deadline(ACKS_0_QUIET_S)
        while not deadline.expired() and any(ends[p] < wanted[p] for p in partitions):
            time.sleep(0.2)
            again = session.list_offsets(topic, partitions, "latest")
            if again != ends:
                ends = again
                quiet.extend(ACKS_0_QUIET_S)
            elif quiet.expired():
                break
    return {p: max(ends[p], ledger.last_acked_offset(p) + 1) for p in partitions}


def _consumer(conn: ConnectionSettings, settings: ProbeSettings, group: str) -> Any:
    return new_consumer(conn, None, **{
        "group.id": group, "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed" if settings.transactional else "read_uncommitted",
        "fetch.max.bytes": 52428800,
    })


class ReadPass:
    """One read-back pass: a fresh consumer reads every partition from where the run
    began, feeding the verifier, until each is read past its end (:meth:`drain`).

    :meth:`step` takes one batch of what the client has fetched; the live pass calls it
    from the send loop while the producer writes (one thread: the verifier and the
    ledger are never touched concurrently).
    """

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings, topic: str,
                 partitions: list[int], start_offsets: dict[int, int], verifier: Verifier,
                 run_id: bytes, pass_no: int) -> None:
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.start_offsets = start_offsets
        self.verifier, self.run_id, self.pass_no = verifier, run_id, pass_no
        self.consumer: Any = _consumer(conn, settings,
                                       f"kaudit-probe-verify-{run_id.hex()}-{pass_no}")
        # next offset to read per partition (from messages and end-of-partition events)
        self.position = dict(start_offsets)
        # the last end of partition reached, and when it was first reached
        self.reached_end: dict[int, tuple[int, float]] = {}
        self.consumer.assign([client.TopicPartition(topic, p, start_offsets[p])
                              for p in partitions])

    def step(self, timeout: float = 0.0, max_messages: int = READ_BATCH) -> int:
        """Observe one batch of fetched messages; return how many were data messages."""
        batch = self.consumer.consume(num_messages=max_messages, timeout=timeout)
        if not batch:
            return 0
        eof = client.KafkaError._PARTITION_EOF
        position = self.position
        observe = self.verifier.observe_sequence
        unpack = RUN_AND_SEQUENCE.unpack_from
        run_id, pass_no = self.run_id, self.pass_no
        data = 0
        for msg in batch:
            err = msg.error()
            if err is not None:
                if err.code() == eof:
                    p = msg.partition()
                    if msg.offset() > position.get(p, 0):
                        position[p] = msg.offset()
                    if self.reached_end.get(p, (-1, 0.0))[0] != msg.offset():
                        self.reached_end[p] = (msg.offset(), time.monotonic())
                continue
            data += 1
            p = msg.partition()
            offset = msg.offset()
            if offset >= position.get(p, 0):
                position[p] = offset + 1
            value = msg.value()
            if value is None or len(value) < HEADER_SIZE:
                continue
            magic, version, rid, seq = unpack(value)
            if magic == MAGIC and version == VERSION and rid == run_id:
                observe(p, offset, seq, pass_no)
        return data

    def drain(self, ends: dict[int, int]) -> bool:
        """Read on until every partition is read up to its end (see :func:`read_ends`).
        Give up after the timeout (at least 10 s) without a message, or on a partition
        whose log has ended short of it for :data:`END_QUIET_S`. True when every
        partition got there."""
        position = self.position
        pending = [p for p in self.partitions if position[p] < ends[p]]
        idle_s = max(self.conn.timeout, 10)
        idle = Deadline(idle_s)
        short = False
        while pending and not idle.expired():
            if self.step(timeout=0.5, max_messages=10000):
                idle.extend(idle_s)
            pending = [p for p in pending if position[p] < ends[p]]
            # Read to the end of its log, and the end has not moved: offsets acknowledged
            # past it are not coming (a failover truncated them). Waiting out the idle
            # timeout would change nothing but the run's length.
            now = time.monotonic()
            ended = [p for p in pending if self.reached_end.get(p, (-1, now))[0] == position[p]
                     and now - self.reached_end[p][1] >= END_QUIET_S]
            if ended:
                short = True
                pending = [p for p in pending if p not in ended]
        return not pending and not short

    def close(self) -> None:
        """Close the consumer (idempotent)."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


def live_pass_doubt(session: AdminSession, topic: str, partitions: list[int],
                    log: EventLog, start_offsets: dict[int, int]) -> str | None:
    """Why the live pass may not show the log as it stands now; None when nothing can
    have rewritten it behind the reader. A clean leader change keeps what readers saw,
    an unclean one may not, and both look alike from here: any leader change counts."""
    changed = sorted({e.partition for e in log.events()
                      if e.kind == "leader-change" and e.partition is not None})
    if changed:
        return f"leadership changed in partition(s) {', '.join(map(str, changed))}"
    try:
        lows = session.list_offsets(topic, partitions, "earliest")
    except Exception as exc:  # cannot tell: read again rather than trust
        return f"could not read the log start offsets: {exc}"
    deleted = [p for p, low in sorted(lows.items()) if low > start_offsets.get(p, 0)]
    if deleted:
        return f"records were deleted from partition(s) {', '.join(map(str, deleted))}"
    return None


def read_back(conn: ConnectionSettings, settings: ProbeSettings, topic: str,
              partitions: list[int], start_offsets: dict[int, int], ends: dict[int, int],
              verifier: Verifier, run_id: bytes, pass_no: int) -> bool:
    """Read every partition from its start offset past its last acked offset."""
    reader = ReadPass(conn, settings, topic, partitions, start_offsets, verifier, run_id,
                      pass_no)
    try:
        return reader.drain(ends)
    finally:
        reader.close()


class LatencyTail(threading.Thread):
    """Reads the topic while the probe writes it, as a consumer application would: for
    end-to-end latency, and to remember what a reader was shown (one byte per message)."""

    def __init__(self, conn: ConnectionSettings, topic: str, partitions: list[int],
                 start_offsets: dict[int, int], run_id: bytes) -> None:
        super().__init__(name="kaudit-latency-tail", daemon=True)
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.start_offsets, self.run_id = start_offsets, run_id
        self.histogram = LatencyHistogram()
        self.seen = [bytearray() for _ in range(max(partitions) + 1)]
        """Per partition, 1 at each sequence this reader was shown."""
        self.epochs = [EpochRuns() for _ in range(max(partitions) + 1)]
        """Per partition, the leader epoch each record shown was written in."""
        self._stopping = threading.Event()

    def read_then_lost_sequences(self, verifier: Verifier) -> dict[int, list[int]]:
        """The messages this reader was shown that the log then lost, by partition, sorted
        (a consumer only ever sees writes below the high watermark, which every in-sync
        replica has). Read once the reader has stopped."""
        return {p: sorted(seq for seq in verifier.lost_sequences(p)
                          if seq < len(seen) and seen[seq])
                for p, seen in enumerate(self.seen) if seen}

    def run(self) -> None:
        consumer = new_consumer(self.conn, None, **{
            "group.id": f"kaudit-probe-tail-{self.run_id.hex()}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10})
        try:
            consumer.assign([client.TopicPartition(self.topic, p, self.start_offsets[p])
                             for p in self.partitions])
            while not self._stopping.is_set():
                for msg in consumer.consume(num_messages=10000, timeout=0.2):
                    if msg.error() is None:
                        record = decode(msg.value())
                        if record is not None and record.run_id == self.run_id:
                            self.histogram.record((time.time_ns() - record.sent_ns) / 1e6)
                            p, seq = msg.partition(), record.partition_seq
                            seen = self.seen[p]
                            if seq >= len(seen):
                                seen.extend(bytes(seq + 1 - len(seen) + 4096))
                            seen[seq] = 1
                            self.epochs[p].note(seq, msg.leader_epoch())
        finally:
            consumer.close()

    def stop(self) -> None:
        """Stop reading."""
        self._stopping.set()
        self.join(timeout=10)
