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
from kaudit.connect.settings import ConnectionSettings


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
        errors: list[str] = []
        ends = dict(self.starts)

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err.str())
            else:
                ends[msg.partition()] = max(ends[msg.partition()], msg.offset() + 1)

        producer = new_producer(self.conn, None, **{
            "acks": "all", "enable.idempotence": True, "linger.ms": 5 if self.rate else 20,
            "on_delivery": delivered})
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
        if left or errors:
            self.error = (f"could not fill the input topic {self.topic}: "
                          f"{len(errors) + left} record(s) not written "
                          f"({errors[0] if errors else 'timed out'})")
        self.say(f"{sum(ends[p] - self.starts[p] for p in self.partitions)} records in "
                 f"{len(self.partitions)} partitions of {self.topic}")
        self._ends = ends
