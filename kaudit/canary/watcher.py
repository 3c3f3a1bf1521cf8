"""The canary's watcher: what may block, read off the send-and-read loop."""

from __future__ import annotations

import threading
import time

from kaudit.canary.state import CanaryState
from kaudit.cluster import client
from kaudit.cluster.client import AdminSession
from kaudit.connection.settings import ConnectionSettings
from kaudit.waiting import Deadline

HOUSEKEEPING_S = 1.0
TOPIC_LOOK_S = 10.0


class Watcher(threading.Thread):
    """Reads what may block off the send-and-read loop: each partition's log start offset
    (with the reader's positions just before, so a loss is judged against a log start read
    after the reader passed it) about once a second, and the topic's partitions, leaders
    and ISR every :data:`TOPIC_LOOK_S`. A cluster out of reach only delays its answers."""

    def __init__(self, canary: CanaryState, conn: ConnectionSettings) -> None:
        super().__init__(name="kaudit-canary-watch", daemon=True)
        self.canary, self.timeout = canary, conn.timeout
        self.session = AdminSession(conn)  # its own: no fault's excuse holds it back
        self.seen: tuple[dict[int, int], dict[int, int]] | None = None
        """(reader positions, log starts read after them), taken by the loop."""
        self.grown: list[int] = []
        """Partitions the topic gained, taken by the loop."""
        self.done = threading.Event()

    def run(self) -> None:
        canary, next_look = self.canary, 0.0
        while not self.done.wait(HOUSEKEEPING_S):
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
            self.seen = (positions, {p: offset for (_, p), offset in found.items()})
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + TOPIC_LOOK_S
                self._look_at_topic(set(parts))

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
