"""The canary's last hour, second by second, for the summary page's timeline chart.

A canary may run for weeks: only the last :data:`KEPT_S` seconds are kept (Prometheus has
the long history), in a ring of arrays allocated once at the start, so the timeline's
memory is the same in the first minute as in the third week. Each second counts the
records sent, acknowledged, failed and indeterminate in it, the losses and duplicates
declared in it, and its slowest acknowledgement. Nothing here reads a clock: the caller
passes ``now`` (monotonic).
"""

from __future__ import annotations

from array import array
from typing import Any

KEPT_S = 3600
KINDS = ("sent", "acked", "failed", "indeterminate", "lost", "duplicated")
_NO_LATENCY = -1.0


class Timeline:
    """Counts per second since ``started``, the last ``kept_s`` seconds of them."""

    def __init__(self, started: float, kept_s: int = KEPT_S) -> None:
        self.started, self.kept_s = started, kept_s
        self._counts = {kind: array("q", bytes(8 * kept_s)) for kind in KINDS}
        self._latency_ms = array("d", [_NO_LATENCY]) * kept_s
        self._first: int | None = None
        """The oldest second kept; None until the first count."""
        self._last = -1

    def add(self, kind: str, now: float, n: int = 1) -> None:
        slot = self._slot(now)
        if slot is not None and kind in self._counts:
            self._counts[kind][slot] += n

    def ack_latency(self, now: float, seconds: float) -> None:
        slot = self._slot(now)
        if slot is not None:
            self._latency_ms[slot] = max(self._latency_ms[slot], seconds * 1000.0)

    def rows(self) -> list[dict[str, Any]]:
        """The seconds kept, as the probe's timeline rows. A second is ``unavailable`` when
        records were sent in it and no acknowledgement came in it, the one before or the
        one after (an ack that lands just past a second's end is not an outage)."""
        if self._first is None:
            return []
        seconds = range(self._first, self._last + 1)
        ticks: list[dict[str, Any]] = []
        for second in seconds:
            slot = second % self.kept_s
            latency = self._latency_ms[slot]
            ticks.append({"second": second,
                          **{kind: self._counts[kind][slot] for kind in KINDS},
                          "ack_latency_max_ms": None if latency == _NO_LATENCY else latency})
        for i, tick in enumerate(ticks):
            near = ticks[max(0, i - 1):i + 2]
            down = tick["sent"] > 0 and not any(t["acked"] for t in near)
            tick["state"] = "unavailable" if down else "available"
        return ticks

    def _slot(self, now: float) -> int | None:
        """The ring's slot for ``now``'s second (seconds passed since the last count are
        cleared as quiet ones); None for a second older than those kept."""
        second = max(0, int(now - self.started))
        if second > self._last:
            # Quiet seconds are kept too: a gap is a second with nothing in it.
            for quiet in range(max(self._last + 1, second - self.kept_s + 1), second + 1):
                slot = quiet % self.kept_s
                for column in self._counts.values():
                    column[slot] = 0
                self._latency_ms[slot] = _NO_LATENCY
            if self._first is None:
                self._first = second
            self._last = second
            self._first = max(self._first, second - self.kept_s + 1)
        if self._first is None or second < self._first:
            return None
        return second % self.kept_s
