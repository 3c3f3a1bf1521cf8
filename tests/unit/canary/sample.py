"""A canary whose books are filled by hand (no cluster), for the summary's tests."""

from __future__ import annotations

import threading
from typing import Any, cast

from kaudit.canary.book import PartitionBook
from kaudit.canary.service import Canary
from kaudit.canary.state import CanarySettings, CanaryState
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.model import ProbeSettings


def a_canary_run(expect: str | None = None) -> Canary:
    """A canary with no cluster behind it (its connection carries a secret)."""
    settings = CanarySettings(producer=ProbeSettings(rate=10, expect=expect))
    conn = ConnectionSettings("127.0.0.1:1", properties={"sasl.password": "s3cret-pw"})
    return Canary(conn, settings, cast(Any, None), threading.Event(), lambda _: None)


def a_canary(expect: str | None = None) -> CanaryState:
    """The state of :func:`a_canary_run`, its books filled by hand."""
    canary = a_canary_run(expect).state
    for part in (0, 1):
        canary.books[part] = PartitionBook(part, 60, 5)
    b0, b1 = canary.books[0], canary.books[1]
    for seq in range(3):
        b0.sent(seq, 0.0)
        b0.acked(seq, seq, 0.1)
    b0.read(1, 1, 0.2)
    found = b0.read(1, 3, 0.3)  # a duplicate
    b0.read(2, 2, 0.4)
    found += b0.passed(3, 1, 0.5)  # seq 0 at offset 0, below the log start 1: deleted
    for event in found:
        canary.add_event(event)
    b1.sent(0, 0.0)
    b1.acked(0, 7, 0.1)  # acknowledged, not read by the end
    start = canary.started
    for second in range(20):  # the timeline: 10 records a second, an outage at 8-11 s
        canary.timeline.add("sent", start + second + 0.1, 10)
        if not 8 <= second <= 11:
            canary.timeline.add("acked", start + second + 0.2, 10)
            canary.timeline.ack_latency(start + second + 0.2, 0.004 + second / 1000)
    canary.log.add("leader-change", "leader 1 -> 2", 0)
    return canary
