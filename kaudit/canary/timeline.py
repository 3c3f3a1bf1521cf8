"""The canary's last hour, second by second, for the summary page's timeline chart.

A canary may run for weeks: only the last :data:`KEPT_S` seconds are kept (Prometheus has
the long history). Each second counts the records sent, acknowledged, failed and
indeterminate in it, the losses and duplicates declared in it, and its slowest
acknowledgement. Nothing here reads a clock: the caller passes ``now`` (monotonic).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

KEPT_S = 3600
KINDS = ("sent", "acked", "failed", "indeterminate", "lost", "duplicated")


@dataclass(slots=True)
class Tick:
    second: int
    sent: int = 0
    acked: int = 0
    failed: int = 0
    indeterminate: int = 0
    lost: int = 0
    duplicated: int = 0
    ack_latency_max_ms: float | None = None


class Timeline:
    """Counts per second since ``started``, the last ``kept_s`` seconds of them."""

    def __init__(self, started: float, kept_s: int = KEPT_S) -> None:
        self.started = started
        self.ticks: deque[Tick] = deque(maxlen=kept_s)

    def add(self, kind: str, now: float, n: int = 1) -> None:
        tick = self._tick(now)
        if tick is not None and kind in KINDS:
            setattr(tick, kind, getattr(tick, kind) + n)

    def ack_latency(self, now: float, seconds: float) -> None:
        tick = self._tick(now)
        if tick is not None:
            ms = seconds * 1000.0
            tick.ack_latency_max_ms = max(tick.ack_latency_max_ms or 0.0, ms)

    def rows(self) -> list[dict[str, Any]]:
        """The seconds kept, as the probe's timeline rows. A second is ``unavailable`` when
        records were sent in it and no acknowledgement came in it, the one before or the
        one after (an ack that lands just past a second's end is not an outage)."""
        ticks = list(self.ticks)
        rows = []
        for i, tick in enumerate(ticks):
            near = ticks[max(0, i - 1):i + 2]
            down = tick.sent > 0 and not any(t.acked for t in near)
            rows.append({**asdict(tick), "state": "unavailable" if down else "available"})
        return rows

    def _tick(self, now: float) -> Tick | None:
        second = max(0, int(now - self.started))
        ticks = self.ticks
        if not ticks or second > ticks[-1].second:
            # Quiet seconds are kept too: a gap is a second with nothing in it.
            first = ticks[-1].second + 1 if ticks else second
            for s in range(max(first, second - (ticks.maxlen or 0) + 1), second + 1):
                ticks.append(Tick(s))
            return ticks[-1]
        back = ticks[-1].second - second
        # An answer for an earlier second (a delivery report comes after its send).
        return ticks[-1 - back] if back < len(ticks) else None
