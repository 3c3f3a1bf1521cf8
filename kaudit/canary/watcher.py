"""The canary's watcher: what may block, read off the send-and-read loop."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kaudit.canary.book import LogEnd
from kaudit.canary.state import CanaryState
from kaudit.cluster import client
from kaudit.cluster.client import AdminSession
from kaudit.cluster.protocol import CURRENT_EPOCH, EpochEnd, read_epoch_ends
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline

HOUSEKEEPING_S = 1.0
DRAINING_LOOK_S = 0.25
"""How often the log is looked at once the canary is stopping: the stop waits for exactly
these answers (a log end that settles the last records), so they are asked for more often."""
TOPIC_LOOK_S = 10.0
SETTLED_S = 1.0
"""An acknowledged record past the log end for longer than this is asked about: an acks=1
record lies past it until its followers copy it, normally within milliseconds."""


@dataclass(frozen=True)
class Seen:
    """One look at the log, for the loop to judge its books by."""

    positions: dict[int, int]
    """The reader's next offset per partition, just before the log starts were read."""
    starts: dict[int, int]
    ends: dict[int, LogEnd] = field(default_factory=dict)
    """The partitions with acknowledged records long past the high watermark, and where
    their current leader's log ends."""


class Watcher(threading.Thread):
    """Reads what may block off the send-and-read loop: each partition's log start offset
    (with the reader's positions just before, so a loss is judged against a log start read
    after the reader passed it) about once a second, and the topic's partitions, leaders
    and ISR every :data:`TOPIC_LOOK_S`. A cluster out of reach only delays its answers."""

    def __init__(self, canary: CanaryState, conn: ConnectionSettings) -> None:
        super().__init__(name="kaudit-canary-watch", daemon=True)
        self.canary, self.timeout = canary, conn.timeout
        self.session = AdminSession(conn)  # its own: no fault's excuse holds it back
        self.conn = conn
        self.seen: Seen | None = None
        """The last look at the log, taken by the loop."""
        self.grown: list[int] = []
        """Partitions the topic gained, taken by the loop."""
        self.done = threading.Event()
        self.draining = threading.Event()
        """Set when the canary stops: its last records wait on what this thread reads."""

    def run(self) -> None:
        canary, next_look = self.canary, 0.0
        while not self.done.wait(DRAINING_LOOK_S if self.draining.is_set() else HOUSEKEEPING_S):
            with canary.lock:
                positions, parts = dict(canary.positions), sorted(canary.books)
            # A partition without a leader is not waited for (a fault's excuse would hold
            # every other partition's judgement back with it): it is judged next time.
            unread: dict[tuple[str, int], str] = {}
            try:
                found = self.session.list_offsets_of(
                    [(canary.settings.topic, p) for p in parts], "earliest", failed=unread,
                    deadline=Deadline(2 * HOUSEKEEPING_S))
            except Exception:  # out of reach: nothing is judged until it answers
                continue
            starts = {p: offset for (_, p), offset in found.items()}
            self.seen = Seen(positions, starts, self._log_ends(parts))
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + TOPIC_LOOK_S
                self._look_at_topic(set(parts))

    def _log_ends(self, parts: list[int]) -> dict[int, LogEnd]:
        """For each partition with acknowledged records long past its high watermark, where
        its current leader's own log ends, in its current epoch: the evidence that they
        were cut off (nothing will be written at their offsets for a reader to pass them)."""
        canary, topic = self.canary, self.canary.settings.topic
        try:
            ends = self.session.list_offsets_of([(topic, p) for p in parts], "latest",
                                                failed={}, deadline=Deadline(HOUSEKEEPING_S))
        except Exception:  # out of reach: asked again next time
            return {}
        asked_at = time.monotonic()
        with canary.lock:
            wanted = [p for p in parts if (topic, p) in ends
                      and canary.books[p].beyond(ends[(topic, p)], asked_at - SETTLED_S)]
        if not wanted:
            return {}
        try:
            md = self.session.admin.list_topics(topic=topic, timeout=HOUSEKEEPING_S)
            leaders = {p: m.leader for p, m in md.topics[topic].partitions.items()}
            _, _, brokers = self.session.describe_identity()
        except Exception:
            return {}
        asks = {(topic, p): (leaders[p], CURRENT_EPOCH) for p in wanted
                if leaders.get(p, -1) >= 0}
        answers = read_epoch_ends(self.conn, {b.id: b for b in brokers}, asks,
                                  Deadline(2 * HOUSEKEEPING_S))
        return {p: LogEnd(ends[(t, p)], answer.leader, answer.epoch, answer.end_offset,
                          asked_at)
                for (t, p), answer in answers.items() if isinstance(answer, EpochEnd)}

    def _look_at_topic(self, known: set[int]) -> None:
        canary = self.canary
        try:
            md = self.session.admin.list_topics(topic=canary.settings.topic,
                                                  timeout=self.timeout)
        except client.KafkaException:
            return
        topic = md.topics.get(canary.settings.topic)
        if topic is None or topic.error is not None:
            return
        leaders = {p: m.leader for p, m in topic.partitions.items()}
        for p, leader in sorted(leaders.items()):
            before = canary.health.leaders.get(p)
            if before is not None and before != leader:
                canary.log.add("leader-change", f"leader {before} -> {leader}", p)
        canary.health.leaders = leaders
        canary.health.isr_sizes = {p: len(m.isrs) for p, m in topic.partitions.items()}
        self.grown = sorted(set(topic.partitions) - known - set(self.grown)) + self.grown
