"""Read stretches of a topic's partitions, ``partition -> [start, end)``, to their ends.

One loop for every reader that needs a bounded stretch of a log read whole (reconcile's
samples, the pipeline's dead letter queue and status topic, the probe's committed
output, the records kept below a truncation): the consumer is assigned, never joins or
commits to a group, and a partition is done when a record at or past its end arrives or
the log ends short of it (a transaction's marker or an aborted batch can take the last
offsets). The probe's own read-back steps between sends and is not a bounded read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kaudit.cluster import client
from kaudit.waiting import Deadline

BATCH = 1000
"""Records taken from the client per call."""


class SegmentReader:
    """Reads each ``partition -> [start, end)`` of ``topic`` with ``consumer`` (created with
    ``enable.partition.eof``); :meth:`records` yields the records inside the segments.

    After a read, :attr:`left` holds the partitions not read to their end (``partition ->
    end``): empty when all were. With ``done_at_log_end`` false a partition is done only
    by a record or a log end at or past its end, for a log that may still grow to it."""

    def __init__(self, consumer: Any, topic: str, segments: Mapping[int, tuple[int, int]],
                 *, done_at_log_end: bool = True) -> None:
        self.consumer, self.topic = consumer, topic
        self.left = {p: end for p, (start, end) in segments.items() if start < end}
        self.done_at_log_end = done_at_log_end
        assigned = [client.TopicPartition(topic, p, segments[p][0]) for p in self.left]
        if assigned:
            consumer.assign(assigned)
            consumer.resume(assigned)  # a consumer reused for another pass paused them

    def records(self, deadline: Deadline) -> Iterator[Any]:
        """The records inside the segments, in each partition's order, until every
        partition is done or ``deadline`` expires."""
        left, eof = self.left, client.KafkaError._PARTITION_EOF
        while left and not deadline.expired():
            for msg in self.consumer.consume(BATCH, deadline.slice(0.5)):
                p = msg.partition()
                end = left.get(p)
                if end is None:
                    continue
                error = msg.error()
                if error is not None:
                    if error.code() == eof and (self.done_at_log_end or msg.offset() >= end):
                        self._done(p)
                    continue
                if msg.offset() < end:
                    yield msg
                if msg.offset() + 1 >= end:
                    self._done(p)

    def _done(self, partition: int) -> None:
        del self.left[partition]
        # Fetched records past the end would crowd the batches of the partitions left.
        self.consumer.pause([client.TopicPartition(self.topic, partition)])
