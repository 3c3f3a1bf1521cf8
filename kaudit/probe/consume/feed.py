"""The input of a consumer run: ``--count`` sequenced records written round-robin to the
input topic, idempotent and acks=all, either all before the workers start (``--rate 0``) or
at ``--rate`` records a second while they read, as a live topic is written.

The input is then whatever each partition holds from its first offset (read before the
first write) to one past the highest offset the broker acknowledged (from the delivery
reports, so no request is needed while a broker fault may be in force): the verifier's
``[start, end)`` per partition.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kaudit.cluster.client import AdminSession, new_producer
from kaudit.cluster.leaders import LeaderGone
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure
from kaudit.waiting import Deadline


class Acks:
    """The feed's delivery reports: each partition's end so far and the errors.

    A record acknowledged without an offset (librdkafka reports -1, ``None`` here, when the
    broker answers a retried batch with DUPLICATE_SEQUENCE_NUMBER: it was written, where is
    not said) matters only when no later record of its partition was placed: the
    idempotent feed writes each partition in order, so a later offset covers it. Such
    partitions are :meth:`unplaced`: their end must be read from the broker. (Arithmetic
    on that ``None`` inside the callback once surfaced from ``flush()`` as a SystemError:
    confluent-kafka re-raises a callback's exception badly on Python 3.11.)
    """

    def __init__(self, starts: dict[int, int]) -> None:
        self.ends = dict(starts)
        self.errors: list[str] = []
        self._placed: dict[int, int] = {}
        """Partition -> the highest record number acknowledged with its offset."""
        self._unplaced: dict[int, int] = {}
        """Partition -> the highest record number acknowledged without one."""

    def delivered(self, err: Any, msg: Any) -> None:
        """librdkafka's delivery report for one record (its value ends in its number)."""
        if err is not None:
            self.errors.append(err.str())
            return
        partition, offset = msg.partition(), msg.offset()
        number = int(msg.value().rsplit(b" ", 1)[-1])
        if offset is None or offset < 0:
            self._unplaced[partition] = max(self._unplaced.get(partition, -1), number)
            return
        self._placed[partition] = max(self._placed.get(partition, -1), number)
        if offset + 1 > self.ends[partition]:
            self.ends[partition] = offset + 1

    def unplaced(self) -> list[int]:
        """The partitions whose last acknowledged record came without an offset."""
        return sorted(p for p, n in self._unplaced.items() if n > self._placed.get(p, -1))


class Feed:
    """Writes the input; :meth:`inputs` is None until every record is acknowledged."""

    def __init__(self, conn: ConnectionSettings, session: AdminSession, topic: str,
                 partitions: list[int], count: int, rate: float,
                 say: Callable[[str], None]) -> None:
        self.conn, self.session, self.topic, self.say = conn, session, topic, say
        self.partitions, self.count, self.rate = partitions, count, rate
        self.starts: dict[int, int] = session.list_offsets(topic, partitions, "earliest")
        self.error: str | None = None
        """Why the input could not be written (set once the feed is over)."""
        self.stop = threading.Event()
        """Set to end the feed early (Ctrl-C, a stalled run); what was written counts."""
        self._ends: dict[int, int] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Write in the background (``--rate`` > 0)."""
        self._thread = threading.Thread(target=self.write, daemon=True)
        self._thread.start()

    def join(self) -> None:
        """Wait for the background writer (after :attr:`stop` when the run ends early)."""
        if self._thread is not None:
            self._thread.join()

    def inputs(self) -> dict[int, tuple[int, int]] | None:
        """Each partition's ``[start, end)``, once the feed is over."""
        if self._ends is None:
            return None
        return {p: (self.starts[p], self._ends[p]) for p in self.partitions}

    def written(self) -> int:
        """Records in the input so far counted as the whole input (``--count``) until the
        feed is over: what the share of ``--fault-at`` is of."""
        inputs = self.inputs()
        return self.count if inputs is None else sum(e - s for s, e in inputs.values())

    def write(self) -> None:
        """Write every record (paced when ``--rate`` is set), wait for every
        acknowledgement, read the ends."""
        acks = Acks(self.starts)
        producer = new_producer(self.conn, None, **{
            "acks": "all", "enable.idempotence": True, "linger.ms": 5 if self.rate else 20,
            "on_delivery": acks.delivered})
        n = len(self.partitions)
        began = time.monotonic()
        for i in range(self.count):
            if self.stop.is_set():
                break
            if self.rate:
                # Paced: the i-th record is due at began + i / rate.
                while (wait := began + i / self.rate - time.monotonic()) > 0:
                    producer.poll(min(wait, 0.05))
            while True:
                try:
                    producer.produce(self.topic, value=b"kaudit-consume %d" % i,
                                     partition=self.partitions[i % n])
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
        # A broker fault can be in force now: the producer retries until its
        # delivery.timeout.ms; the flush outlasts the retries.
        left = producer.flush(max(self.conn.timeout * 3, 130.0))
        errors, ends = acks.errors, acks.ends
        if acks.unplaced() and not left:
            self._read_ends(acks.unplaced(), ends)
        if left or errors:
            self.error = (f"could not fill the input topic {self.topic}: "
                          f"{len(errors) + left} record(s) not written "
                          f"({errors[0] if errors else 'timed out'})")
        self.say(f"{sum(ends[p] - self.starts[p] for p in self.partitions)} records in "
                 f"{len(self.partitions)} partitions of {self.topic}")
        self._ends = ends

    def _read_ends(self, partitions: list[int], ends: dict[int, int]) -> None:
        """Every record is answered and the feed is the topic's only writer: the high
        watermark is the end. A fault may still hold a leader down: asked again until it
        is back, within the flush's own bound."""
        deadline = Deadline(max(self.conn.timeout * 3, 130.0))
        while True:
            try:
                latest = self.session.list_offsets(self.topic, partitions, "latest")
                ends.update({p: max(ends[p], end) for p, end in latest.items()})
                return
            except (ConnectionFailure, LeaderGone) as exc:
                if deadline.expired() or self.stop.wait(1.0):
                    self.error = (f"could not read the end of {self.topic}, where records "
                                  f"were acknowledged without their offsets: {exc}")
                    return
