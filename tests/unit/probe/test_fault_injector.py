"""The fault injector's bookkeeping: which events a run records (no broker involved)."""

from __future__ import annotations

import time
from typing import Any, cast

from kaudit.probe.faults import FaultInjector, LabControl, parse_fault
from kaudit.probe.monitor import EventLog


class RecordingLab:
    """Stands in for LabControl; the run ends (cancel) during the first bounce."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.injector: FaultInjector | None = None

    def kill(self, broker: int, signal_name: str) -> None:
        self.calls.append((signal_name, broker))
        assert self.injector is not None
        self.injector.cancel()

    def start(self, broker: int) -> None:
        self.calls.append(("start", broker))


def test_a_run_that_ends_early_says_how_many_bounces_it_had() -> None:
    lab = RecordingLab()
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("bounce-leader:3")], lambda: True, 0.3, log,
                             cast(LabControl, cast(Any, lab)), lambda: (1, [2, 3]))
    lab.injector = injector
    injector.run()
    assert lab.calls == [("KILL", 1), ("start", 1)]
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("fault", "bounce 1/3: SIGKILL leader 1"),
        ("heal", "broker 1 restarted"),
        ("note", "bounce-leader: the run ended after 1 of 3 bounces"),
    ]


def test_exec_heal_is_one_heal_event_with_its_exit_code() -> None:
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("exec:'true'"), parse_fault("exec-heal:'false'")],
                             lambda: True, 0.0, log, None, lambda: (1, [2, 3]))
    injector.run()
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("fault", "exec command exited 0"),
        ("heal", "exec heal command exited 1"),
        ("note", "heal failed: exec-heal: command exited 1"),
    ]
    assert injector.errors == ["heal exec-heal: command exited 1"]
