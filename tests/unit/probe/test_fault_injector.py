"""The fault injector's bookkeeping: which events a run records (no broker involved)."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from kaudit.errors import InputError
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


class OrderLab:
    """Records the order of the lab calls, and whether the run was held meanwhile."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object, bool]] = []
        self.injector: FaultInjector | None = None

    def _held(self) -> bool:
        return self.injector is not None and self.injector.under_way()

    def kill(self, broker: int, signal_name: str) -> None:
        self.calls.append((signal_name, broker, self._held()))

    def start(self, broker: int) -> None:
        self.calls.append(("start", broker, self._held()))

    def resume(self, brokers: list[int]) -> None:
        self.calls.append(("resume", tuple(brokers), self._held()))


def test_lag_then_kill_leader_freezes_followers_kills_the_leader_then_resumes() -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("lag-then-kill-leader:0.1")], lambda: True, 0.0,
                             log, cast(LabControl, cast(Any, lab)), lambda: (1, [2, 3]))
    lab.injector = injector
    injector.run()  # the leader stays down for --fault-duration (0 here), then restarts
    # The kill comes while the followers are still frozen (else they would fetch the
    # leader's writes); the run is held open until the leader is back too.
    assert lab.calls == [("STOP", 2, True), ("STOP", 3, True), ("KILL", 1, True),
                         ("resume", (2, 3), True), ("start", 1, True)]
    assert not injector.under_way()
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("fault", "SIGSTOP followers 2,3 for 0.1s (still in the ISR)"),
        ("fault", "SIGKILL leader 1"),
        ("heal", "broker 2 resumed"),
        ("heal", "broker 3 resumed"),
        ("heal", "broker 1 restarted"),
    ]


def test_lag_then_kill_leader_without_followers_kills_nothing() -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("lag-then-kill-leader")], lambda: True, 0.0, log,
                             cast(LabControl, cast(Any, lab)), lambda: (1, []))
    injector.run()
    assert lab.calls == []
    assert injector.errors == ["lag-then-kill-leader:3: lag-then-kill-leader: partition 0 "
                               "has no in-sync follower"]


def test_lag_then_kill_leader_seconds() -> None:
    assert parse_fault("lag-then-kill-leader").argument == "3"
    assert parse_fault("lag-then-kill-leader:2.5").argument == "2.5"
    for bad in ("lag-then-kill-leader:0", "lag-then-kill-leader:9", "lag-then-kill-leader:x"):
        with pytest.raises(InputError, match="at most 8"):
            parse_fault(bad)


def test_the_run_is_held_until_the_fault_is_healed_after_its_duration() -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("kill-broker:2")], lambda: True, 0.3, log,
                             cast(LabControl, cast(Any, lab)), lambda: (1, [2, 3]))
    lab.injector = injector
    injector.run()
    # Down for --fault-duration, then restarted: the run is held open through both.
    assert lab.calls == [("KILL", 2, True), ("start", 2, True)]
    assert not injector.under_way()


def test_the_run_is_held_from_the_trigger_before_the_injector_notices_it() -> None:
    fired = [False]
    injector = FaultInjector([parse_fault("exec:'true'")], lambda: fired[0], 0.0,
                             EventLog(time.monotonic()), None, lambda: (1, [2, 3]))
    assert not injector.under_way()  # not triggered yet: the run may end
    fired[0] = True
    assert injector.under_way()  # triggered, not injected yet: the run must wait for it
    injector.run()
    assert not injector.under_way()
