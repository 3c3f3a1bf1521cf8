"""The read-back: consumer passes that feed the verifier, and the end-to-end latency tail.

Pass 1 may run live, while the producer writes, or after the run; a second, fresh pass
tells a consumer miss from log loss (:mod:`kaudit.probe.runner` decides which).
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import os
import select
import subprocess
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import AdminSession, new_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.epochs import EpochRuns
from kaudit.probe.latency import LatencyHistogram
from kaudit.probe.ledger import Ledger
from kaudit.probe.model import ProbeSettings
from kaudit.probe.monitor import EventLog
from kaudit.probe.payload import decode
from kaudit.probe.reader import (
    END,
    FOREIGN,
    PARTITION_MASK,
    RECORD,
    consumer_config,
    encode_batch,
)
from kaudit.probe.spawn import spawn_worker
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


class ReadPass(abc.ABC):
    """One read-back pass: every partition read from where the run began, feeding the
    verifier, until each is read past its end (:meth:`drain`). What fetches the messages
    varies (:class:`ConsumerPass` in this process, :class:`ReaderProcessPass` in one of
    its own); the bookkeeping and when to stop are here, once.

    :meth:`step` takes one batch of what has been fetched; the live pass calls it from the
    send loop while the producer writes (one thread: the verifier and the ledger are never
    touched concurrently).
    """

    def __init__(self, conn: ConnectionSettings, partitions: list[int],
                 start_offsets: dict[int, int], verifier: Verifier, pass_no: int) -> None:
        self.conn, self.partitions = conn, partitions
        self.verifier, self.pass_no = verifier, pass_no
        # next offset to read per partition (from messages and end-of-partition events)
        self.position = dict(start_offsets)
        # the last end of partition reached, and when it was first reached
        self.reached_end: dict[int, tuple[int, float]] = {}
        self.failure: str | None = None
        """Why the pass could not read on, if it could not (then it is not to be kept)."""

    @abc.abstractmethod
    def step(self, timeout: float = 0.0, max_messages: int = READ_BATCH) -> int:
        """Observe one batch of fetched messages; return how many were data messages."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop reading (idempotent)."""

    def _observe(self, numbers: array[int]) -> int:
        """Observe fetched messages as the reader encodes them (:func:`encode_batch`):
        one path for both readers. Returns how many were data messages."""
        position = self.position
        observe = self.verifier.observe_sequence
        pass_no, data = self.pass_no, 0
        it = iter(numbers)
        for tagged, offset, seq in zip(it, it, it, strict=True):
            if tagged >= END:
                self._end(tagged & PARTITION_MASK, offset)
                continue
            data += 1
            p = tagged & PARTITION_MASK
            if offset >= position.get(p, 0):
                position[p] = offset + 1
            if tagged < FOREIGN:
                observe(p, offset, seq, pass_no)
        return data

    def _end(self, p: int, offset: int) -> None:
        """The end of partition ``p`` was reached at ``offset``."""
        if offset > self.position.get(p, 0):
            self.position[p] = offset
        if self.reached_end.get(p, (-1, 0.0))[0] != offset:
            self.reached_end[p] = (offset, time.monotonic())

    def drain(self, ends: dict[int, int]) -> bool:
        """Read on until every partition is read up to its end (see :func:`read_ends`).
        Give up after the timeout (at least 10 s) without a message, or on a partition
        whose log has ended short of it for :data:`END_QUIET_S`, or at once when the pass
        cannot read on (:attr:`failure`). True when every partition got there."""
        position = self.position
        pending = [p for p in self.partitions if position[p] < ends[p]]
        idle_s = max(self.conn.timeout, 10)
        idle = Deadline(idle_s)
        short = False
        while pending and not idle.expired() and self.failure is None:
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


def _group(run_id: bytes, pass_no: int) -> str:
    return f"kaudit-probe-verify-{run_id.hex()}-{pass_no}"


class ConsumerPass(ReadPass):
    """A read-back pass whose consumer runs in this process."""

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings, topic: str,
                 partitions: list[int], start_offsets: dict[int, int], verifier: Verifier,
                 run_id: bytes, pass_no: int) -> None:
        super().__init__(conn, partitions, start_offsets, verifier, pass_no)
        self.run_id = run_id
        self.consumer: Any = new_consumer(conn, None, **consumer_config(
            settings.transactional, _group(run_id, pass_no)))
        self.consumer.assign([client.TopicPartition(topic, p, start_offsets[p])
                              for p in partitions])

    def step(self, timeout: float = 0.0, max_messages: int = READ_BATCH) -> int:
        batch = self.consumer.consume(num_messages=max_messages, timeout=timeout)
        return self._observe(encode_batch(batch, self.run_id)) if batch else 0

    def close(self) -> None:
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


class ReaderProcessPass(ReadPass):
    """A read-back pass whose consumer runs in a process of its own
    (:mod:`kaudit.probe.reader`): it fetches and decodes on the other core, and this
    process only observes what it hands over. Its start-up costs a Python interpreter:
    worth it for a long run, not a short one (:data:`SEPARATE_READER_FROM`)."""

    PIPE_BYTES = 1 << 20
    """The pipe's capacity, where Linux lets it be raised: the reader fetches ahead while
    the send loop is busy, up to this much."""

    def __init__(self, conn: ConnectionSettings, settings: ProbeSettings, topic: str,
                 partitions: list[int], start_offsets: dict[int, int], verifier: Verifier,
                 run_id: bytes, pass_no: int) -> None:
        super().__init__(conn, partitions, start_offsets, verifier, pass_no)
        handle, name = tempfile.mkstemp(prefix="kaudit-probe-reader-", suffix=".err")
        os.close(handle)
        self.err = Path(name)
        """The reader's stderr: its error, should it fail; deleted when the pass closes."""
        config = {"bootstrap": conn.bootstrap_servers, "properties": conn.properties,
                  "timeout": conn.timeout, "topic": topic, "run_id": run_id.hex(),
                  "group": _group(run_id, pass_no), "transactional": settings.transactional,
                  "start_offsets": {str(p): start_offsets[p] for p in partitions},
                  "parent_pid": os.getpid()}
        self.proc: subprocess.Popen[bytes] | None = spawn_worker(
            "kaudit.probe.reader", config, self.err, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        with contextlib.suppress(OSError, AttributeError):  # Linux only; else the default
            fcntl.fcntl(self.fd, fcntl.F_SETPIPE_SZ, self.PIPE_BYTES)
        os.set_blocking(self.fd, False)
        self.rest = b""

    def step(self, timeout: float = 0.0, max_messages: int = READ_BATCH) -> int:
        if self.proc is None:
            return 0
        wanted = max_messages * RECORD * 8
        chunks, size = [self.rest], len(self.rest)
        while size < wanted:
            try:
                chunk = os.read(self.fd, wanted - size)
            except BlockingIOError:
                if size or not timeout or not select.select([self.fd], [], [], timeout)[0]:
                    break
                continue
            if not chunk:
                self._gone()
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        whole = len(data) - len(data) % (RECORD * 8)
        self.rest = data[whole:]
        numbers: array[int] = array("Q")
        numbers.frombytes(data[:whole])
        return self._observe(numbers)

    def _gone(self) -> None:
        """The reader ended before it was told to: the pass reads no further, and says
        why (its last error line), so that the runner sets it aside and reads again."""
        assert self.proc is not None
        code = self.proc.wait()
        self.proc = None
        self.failure = (f"the read-back process ended with exit code {code}: "
                        f"{_last_line(self.err)}")

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            assert proc.stdout is not None
            proc.stdout.close()  # a reader blocked on a full pipe gets EPIPE
            proc.terminate()
            try:
                proc.wait(timeout=max(self.conn.timeout, 10))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.err.unlink(missing_ok=True)


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return lines[-1] if lines else "no error was written"


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
    reader = ConsumerPass(conn, settings, topic, partitions, start_offsets, verifier, run_id,
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
