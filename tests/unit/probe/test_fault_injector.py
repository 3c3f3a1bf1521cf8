"""The fault injector's bookkeeping: which events a run records (no broker involved)."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import pytest

from kaudit.errors import InputError
from kaudit.probe.faults.injector import FaultInjector, ProducerRestart, Targets
from kaudit.probe.faults.lab import LabControl
from kaudit.probe.faults.registry import parse_fault
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
                             cast(LabControl, cast(Any, lab)), Targets(lambda: (1, [2, 3])))
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
                             lambda: True, 0.0, log, None, Targets(lambda: (1, [2, 3])))
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
                             log, cast(LabControl, cast(Any, lab)), Targets(lambda: (1, [2, 3])))
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
                             cast(LabControl, cast(Any, lab)), Targets(lambda: (1, [])))
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
                             cast(LabControl, cast(Any, lab)), Targets(lambda: (1, [2, 3])))
    lab.injector = injector
    injector.run()
    # Down for --fault-duration, then restarted: the run is held open through both.
    assert lab.calls == [("KILL", 2, True), ("start", 2, True)]
    assert not injector.under_way()


def test_the_run_is_held_from_the_trigger_before_the_injector_notices_it() -> None:
    fired = [False]
    injector = FaultInjector([parse_fault("exec:'true'")], lambda: fired[0], 0.0,
                             EventLog(time.monotonic()), None, Targets(lambda: (1, [2, 3])))
    assert not injector.under_way()  # not triggered yet: the run may end
    fired[0] = True
    assert injector.under_way()  # triggered, not injected yet: the run must wait for it
    injector.run()
    assert not injector.under_way()


def test_shrink_isr_then_kill_leader_waits_for_the_isr_to_shrink_then_restarts_a_stale_one(
        ) -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    # What metadata says after the followers were killed: still in the ISR for a while.
    roles = iter([(1, [2, 3]), (1, [2, 3]), (1, [3]), (1, [])])
    injector = FaultInjector([parse_fault("shrink-isr-then-kill-leader:0.1")], lambda: True,
                             0.0, log, cast(LabControl, cast(Any, lab)),
                             Targets(lambda: next(roles)))
    lab.injector = injector
    injector.run()
    # The stale follower 2 is started by the schedule itself; the heals bring back the
    # leader first (with unclean election off it is the only one with every write), then 3.
    assert [(c[0], c[1]) for c in lab.calls] == [("KILL", 2), ("KILL", 3), ("KILL", 1),
                                                ("start", 2), ("start", 1), ("start", 3)]
    assert all(held for _, _, held in lab.calls)
    assert [(e.kind, e.detail) for e in log.events()][:3] == [
        ("fault", "SIGKILL followers 2,3"),
        ("fault", "the ISR of partition 0 is leader 1 alone; it takes writes alone for 0.1s"),
        ("fault", "SIGKILL leader 1"),
    ]


def test_lose_responses_freezes_the_followers_for_its_seconds_and_kills_nothing() -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("lose-responses:0.2")], lambda: True, 60.0, log,
                             cast(LabControl, cast(Any, lab)), Targets(lambda: (1, [2, 3])))
    lab.injector = injector
    started = time.monotonic()
    injector.run()
    # Nothing is left to heal, so --fault-duration (60 s here) is not waited out.
    assert time.monotonic() - started < 30
    assert [(c[0], c[1]) for c in lab.calls] == [("STOP", 2), ("STOP", 3), ("resume", (2, 3))]


def _send_loop(restart: ProducerRestart, seen: list[str]) -> threading.Thread:
    """Plays the send loop's part of the hand-off."""
    def run() -> None:
        assert restart.requested.wait(10)
        seen.append("dropped")
        restart.dropped.set()
        assert restart.resume.wait(10)
        seen.append("new session")
        restart.done.set()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_restart_producer_drops_the_session_while_the_followers_are_frozen() -> None:
    lab = OrderLab()
    log = EventLog(time.monotonic())
    restart = ProducerRestart()
    seen: list[str] = []
    injector = FaultInjector([parse_fault("restart-producer")], lambda: True, 0.0, log,
                             cast(LabControl, cast(Any, lab)),
                             Targets(lambda: (1, [2, 3]), restart=restart))
    loop = _send_loop(restart, seen)
    injector.run()
    loop.join(10)
    # Frozen before the drop (the old session has appended, unacknowledged batches),
    # resumed before the new session starts.
    assert [(c[0], c[1]) for c in lab.calls] == [("STOP", 2), ("STOP", 3), ("resume", (2, 3))]
    assert seen == ["dropped", "new session"]
    assert [e.detail for e in log.events() if e.kind == "fault"][-1] == (
        "a new producer session re-sent what the old one had not seen acknowledged")


def test_restart_producer_with_transactions_needs_no_freeze() -> None:
    lab = OrderLab()
    restart = ProducerRestart()
    seen: list[str] = []
    injector = FaultInjector([parse_fault("restart-producer")], lambda: True, 0.0,
                             EventLog(time.monotonic()), cast(LabControl, cast(Any, lab)),
                             Targets(lambda: (1, [2, 3]), restart=restart, transactional=True))
    loop = _send_loop(restart, seen)
    injector.run()
    loop.join(10)
    assert lab.calls == []
    assert seen == ["dropped", "new session"]


@pytest.mark.parametrize("text,argument", [
    ("shrink-isr-then-kill-leader", "3"), ("shrink-isr-then-kill-leader:10", "10"),
    ("lose-responses", "4"), ("lose-responses:2.5", "2.5"), ("restart-producer", None)])
def test_new_schedules_parse(text: str, argument: str | None) -> None:
    assert parse_fault(text).argument == argument
    assert parse_fault(text).needs_lab


@pytest.mark.parametrize("bad", ["lose-responses:9", "lose-responses:0",
                                 "shrink-isr-then-kill-leader:31", "restart-producer:2"])
def test_new_schedules_refuse_bad_seconds(bad: str) -> None:
    with pytest.raises(InputError):
        parse_fault(bad)


def _coordinator_lookup(failures: int) -> Any:
    """Names broker 3 as the group's coordinator after ``failures`` failed lookups (a crash
    or rebalance under way)."""
    left = [failures]

    def find() -> int:
        if left[0]:
            left[0] -= 1
            raise RuntimeError("KafkaError{code=_TIMED_OUT}")
        return 3

    return find


class CountingLab(RecordingLab):
    def kill(self, broker: int, signal_name: str) -> None:
        self.calls.append((signal_name, broker))


def _coordinator_injector(lab: Any, failures: int) -> tuple[FaultInjector, EventLog]:
    log = EventLog(time.monotonic())
    targets = Targets(lambda: (1, [2, 3]), coordinator=_coordinator_lookup(failures))
    return FaultInjector([parse_fault("kill-coordinator", "probe consume")], lambda: True,
                         0.0, log, cast(LabControl, lab), targets), log


def test_kill_coordinator_asks_again_while_the_group_lookup_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kaudit.probe.faults import injector as module

    monkeypatch.setattr(module, "COORDINATOR_WAIT_S", 5.0)
    lab = CountingLab()
    injector, log = _coordinator_injector(lab, failures=2)
    injector.run()
    assert lab.calls == [("KILL", 3), ("start", 3)]
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("fault", "SIGKILL coordinator 3"), ("heal", "broker 3 restarted")]
    assert injector.errors == []


def test_a_fault_that_cannot_be_injected_is_said_in_the_report(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kaudit.probe.faults import injector as module

    monkeypatch.setattr(module, "COORDINATOR_WAIT_S", 0.0)
    lab = CountingLab()
    injector, log = _coordinator_injector(lab, failures=99)
    injector.run()
    assert lab.calls == []
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("note", "fault kill-coordinator failed: KafkaError{code=_TIMED_OUT}")]
    assert injector.errors == ["kill-coordinator: KafkaError{code=_TIMED_OUT}"]


def test_a_broker_that_cannot_be_restarted_is_said_in_the_report() -> None:
    lab = CountingLab()
    injector, log = _coordinator_injector(lab, failures=0)

    def start(broker: int) -> None:
        raise RuntimeError(f"broker {broker} exited during start: port in use")

    lab.start = start  # type: ignore[method-assign]
    injector.run()
    assert [(e.kind, e.detail) for e in log.events()] == [
        ("fault", "SIGKILL coordinator 3"),
        ("note", "heal failed: broker 3 restarted: broker 3 exited during start: port in use")]
    assert injector.errors == ["heal broker 3 restarted: broker 3 exited during start: "
                               "port in use"]
    injector.heal()  # the run's own heal afterwards has nothing left to restart
    assert len(log.events()) == 2


def test_a_wait_is_excused_while_a_fault_is_in_force_and_just_after_its_heal() -> None:
    seen: list[float] = []
    lab = OrderLab()
    injector = FaultInjector([parse_fault("kill-broker:2")], lambda: True, 0.2,
                             EventLog(time.monotonic()), cast(LabControl, cast(Any, lab)),
                             Targets(lambda: (1, [2, 3])), settle_s=30.0)
    assert injector.excused_until() == 0.0  # no fault yet: nothing is excused
    lab.kill = lambda broker, signal_name: seen.append(  # type: ignore[method-assign]
        injector.excused_until() - time.monotonic())
    injector.run()
    healed = time.monotonic()
    assert seen and 29 < seen[0] <= 30  # in force: settle_s from now
    assert healed - 1 < injector.excused_until() - 30 <= healed  # healed: settle_s after it


def test_a_run_that_ends_before_the_cue_says_its_faults_never_struck() -> None:
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("kill-leader"), parse_fault("exec:'true'")],
                             lambda: False, 0.0, log, None, Targets(lambda: (1, [2, 3])),
                             cue="--fault-at 30%")
    injector.start()
    assert injector.finish(5.0) == [
        "kill-leader, exec: never struck: the run ended before --fault-at 30%"]
    assert not injector.is_alive() and log.events() == []


def test_a_fault_that_struck_is_not_said_to_have_missed_and_its_failure_is_kept() -> None:
    log = EventLog(time.monotonic())
    injector = FaultInjector([parse_fault("exec:'false'")], lambda: True, 0.0, log, None,
                             Targets(lambda: (1, [2, 3])), cue="--fault-at 30%")
    injector.start()
    injector.join(5.0)
    assert injector.finish(5.0) == ["exec: command exited 1"]
