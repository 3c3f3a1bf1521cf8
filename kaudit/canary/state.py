"""What one canary run shares between its threads: the settings, the books, the events.

The send-and-read loop (``service.py``) writes it; the watcher (``watcher.py``) reads the
reader's positions and writes the partitions' health; the metrics endpoint and the summary
(``result.py``) read it. None of them needs the loop itself, so this is the one thing they
take: the books change under :attr:`CanaryState.lock`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kaudit.canary.book import PartitionBook
from kaudit.canary.timeline import Timeline
from kaudit.cluster.topics import CANARY_TOPIC
from kaudit.probe.model import ProbeSettings
from kaudit.probe.monitor import EventLog

DEFAULT_TOPIC = CANARY_TOPIC
EVENTS_KEPT = 1000
"""Events of each kind the summary keeps (the --events file has every one)."""
NOT_ANOMALIES = ("fault", "heal", "note", "leader-change", "partitions-added")
"""Events --events carries that are not anomalies (faults are in the summary's own list)."""


@dataclass(frozen=True)
class CanarySettings:
    """What ``kaudit canary`` was asked for."""

    producer: ProbeSettings
    """acks, idempotence, message size, rate, faults: the probe's own settings."""
    topic: str = DEFAULT_TOPIC
    duration: float | None = None
    window_s: float = 300.0
    late_after_s: float = 10.0
    drain_s: float = 30.0
    events: Path | None = None


@dataclass
class Health:
    """Gauges the metrics show: is the canary getting through, and where do partitions stand."""

    last_ack: float = 0.0
    last_read: float = 0.0
    last_read_wall: float = 0.0
    leaders: dict[int, int] = field(default_factory=dict)
    isr_sizes: dict[int, int] = field(default_factory=dict)


class CanaryState:
    """One canary run's books, health, timeline and events."""

    def __init__(self, settings: CanarySettings) -> None:
        self.settings = settings
        self.run_id = uuid.uuid4().bytes
        self.started = time.monotonic()
        self.lock = threading.Lock()
        """Held while the books change: the watcher and the metrics endpoint read them from
        their threads."""
        self.books: dict[int, PartitionBook] = {}
        self.positions: dict[int, int] = {}
        """Each partition's next offset to read, as the reader stands."""
        self.health = Health()
        self.timeline = Timeline(self.started)
        self.events: list[dict[str, Any]] = []
        self.anomaly_counts: dict[str, int] = {}
        self.log = EventLog(self.started)
        """Faults, heals, notes and leader changes, as the probe logs them."""
        self.notes: list[str] = []
        self.created = False
        """The run created its topic."""
        self.ack_latency: Callable[[float], None] = lambda _: None
        self.e2e_latency: Callable[[float], None] = lambda _: None
        """Where the latencies go (the metrics endpoint's histograms, when it runs)."""
        self.events_file: IO[str] | None = None
        """``--events``, open while the run goes on."""
        self._lines: dict[str, int] = {}
        """Event lines of each kind kept so far (a line of late reads counts once)."""
        self._late: dict[int, dict[str, Any]] = {}
        """Per partition, the late reads of the current wall-clock second, as one line."""

    def add_event(self, event: dict[str, Any]) -> None:
        """Keep an anomaly the books found for the summary and append it to ``--events`` at
        once, with the wall-clock time; late reads as one line per partition and second."""
        kind = event["kind"]
        event = {"time": round(time.time(), 3), "topic": self.settings.topic, **event}
        at = event.pop("at", None)
        if kind in ("lost", "duplicated"):
            with self.lock:
                self.timeline.add(kind, time.monotonic() if at is None else at)
        if kind not in NOT_ANOMALIES:
            self.anomaly_counts[kind] = self.anomaly_counts.get(kind, 0) + 1
        if kind == "late":
            self._late_read(event)
        else:
            self._keep(event)

    def _late_read(self, event: dict[str, Any]) -> None:
        """During a fault every record is late: thousands of lines would say what one line
        a second says (the first record's sequence, offset and lateness, and the count)."""
        line = self._late.get(event["partition"])
        if line is not None and int(line["time"]) == int(event["time"]):
            line["count"] += 1
            return
        if line is not None:
            self._keep(line)
        self._late[event["partition"]] = {**event, "count": 1}

    def flush_late(self, now: float | None = None) -> None:
        """Keep the late-read lines of seconds before ``now`` (wall clock; None: every
        one, at the end of the run)."""
        for part, line in list(self._late.items()):
            if now is None or int(line["time"]) < int(now):
                del self._late[part]
                self._keep(line)

    def _keep(self, event: dict[str, Any]) -> None:
        # The summary keeps the first EVENTS_KEPT lines of each kind: a flood of late reads
        # must not crowd out the losses. --events has them all.
        kind = event["kind"]
        self._lines[kind] = self._lines.get(kind, 0) + 1
        if kind not in NOT_ANOMALIES and self._lines[kind] <= EVENTS_KEPT:
            self.events.append(event)
        if self.events_file is not None:
            self.events_file.write(json.dumps(event, sort_keys=True) + "\n")
            self.events_file.flush()
