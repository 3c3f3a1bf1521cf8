"""Sample leaders and ISRs through the run, so each loss sits next to its cause."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from kaudit.cluster.client import AdminSession


@dataclass(frozen=True)
class ProbeEvent:
    """Something that happened during the run: a fault, a heal, a leader or ISR change."""

    at_s: float
    """Seconds since the run started."""
    kind: str
    """``fault``, ``heal``, ``leader-change``, ``isr-change``, ``note``."""
    detail: str
    partition: int | None = None


class EventLog:
    """Thread-safe, append-only list of events."""

    def __init__(self, started: float) -> None:
        self.started = started
        self._lock = threading.Lock()
        self._events: list[ProbeEvent] = []

    def add(self, kind: str, detail: str, partition: int | None = None) -> None:
        """Record an event now."""
        with self._lock:
            self._events.append(ProbeEvent(round(time.monotonic() - self.started, 3), kind,
                                           detail, partition))

    def events(self) -> list[ProbeEvent]:
        """All events so far, in time order."""
        with self._lock:
            return sorted(self._events, key=lambda e: e.at_s)


class LeaderMonitor(threading.Thread):
    """Polls the probe topic's metadata and logs every leader and ISR change."""

    def __init__(self, session: AdminSession, topic: str, log: EventLog,
                 interval_s: float = 0.5) -> None:
        super().__init__(name="kaudit-leader-monitor", daemon=True)
        self.session, self.topic, self.log, self.interval_s = session, topic, log, interval_s
        self._stopping = threading.Event()
        self._last: dict[int, tuple[int, tuple[int, ...]]] = {}
        self._lock = threading.Lock()

    def leaders(self) -> dict[int, int]:
        """The latest known leader of each partition (-1: none)."""
        with self._lock:
            return {p: leader for p, (leader, _) in self._last.items()}

    def sample(self) -> None:
        """Take one sample now (also used to seed the state before the run)."""
        try:
            md = self.session.admin.list_topics(topic=self.topic, timeout=2)
        except Exception:  # the cluster may be mid-failure: try again next tick
            return
        topic: Any = md.topics.get(self.topic)
        if topic is None or topic.error is not None:
            return
        for pid, part in sorted(topic.partitions.items()):
            now = (part.leader, tuple(sorted(part.isrs)))
            with self._lock:
                before = self._last.get(pid)
                self._last[pid] = now
            if before is None:
                continue
            if before[0] != now[0]:
                self.log.add("leader-change", f"leader {before[0]} -> {now[0]}", pid)
            if before[1] != now[1]:
                self.log.add("isr-change", f"ISR {list(before[1])} -> {list(now[1])}", pid)

    def run(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        """Stop sampling (takes one last sample first) and wait until the thread is done:
        nothing asks for the topic's metadata once the run deletes it."""
        self.sample()
        self._stopping.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()
