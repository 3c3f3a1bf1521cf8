"""Each fault carries its behaviour: the injector aims it by its registered target and
signal, a run shortens the producer's request timeout by its registered property (the same
for ``kaudit probe`` and the matrix), and every command starts the injector one way, its
lab looked for before any topic."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest

from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe import matrix
from kaudit.probe.faults.injector import FaultInjector, Targets, start_injector
from kaudit.probe.faults.lab import LabControl
from kaudit.probe.faults.registry import (
    FAULTS,
    PRODUCER,
    SHORT_REQUEST_TIMEOUT_MS,
    FaultSpec,
    parse_fault,
    parse_faults,
)
from kaudit.probe.model import ProbeSettings
from kaudit.probe.monitor import EventLog
from tests.conftest import run_in_process


class RecordingLab:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def kill(self, broker: int, signal_name: str) -> None:
        self.calls.append((signal_name, broker))

    def start(self, broker: int) -> None:
        self.calls.append(("start", broker))


def test_every_one_signal_fault_says_its_signal_and_what_it_aims_at() -> None:
    signalled = [f for f in FAULTS.values() if f.step == "signal"]
    assert signalled
    for fault in signalled:
        assert fault.signal in ("KILL", "TERM", "STOP"), fault.name
        assert fault.target in ("leader", "follower", "broker", "coordinator",
                                "share-coordinator"), fault.name


@pytest.mark.parametrize("text,calls,events", [
    ("kill-leader", [("KILL", 1), ("start", 1)],
     [("fault", "SIGKILL leader 1"), ("heal", "broker 1 restarted")]),
    ("stop-leader", [("TERM", 1), ("start", 1)],
     [("fault", "SIGTERM leader 1"), ("heal", "broker 1 restarted")]),
    ("pause-leader", [("STOP", 1), ("start", 1)],
     [("fault", "SIGSTOP leader 1"), ("heal", "broker 1 resumed")]),
    ("pause-follower", [("STOP", 2), ("start", 2)],
     [("fault", "SIGSTOP follower 2"), ("heal", "broker 2 resumed")]),
    ("kill-broker:3", [("KILL", 3), ("start", 3)],
     [("fault", "SIGKILL broker 3"), ("heal", "broker 3 restarted")]),
    ("kill-coordinator", [("KILL", 4), ("start", 4)],
     [("fault", "SIGKILL coordinator 4"), ("heal", "broker 4 restarted")]),
    ("kill-share-coordinator", [("KILL", 5), ("start", 5)],
     [("fault", "SIGKILL share-coordinator 5"), ("heal", "broker 5 restarted")]),
])
def test_a_one_signal_fault_reaches_its_registered_target(
        text: str, calls: list[tuple[str, int]], events: list[tuple[str, str]]) -> None:
    lab, log = RecordingLab(), EventLog(time.monotonic())
    injector = FaultInjector([FaultSpec(*text.split(":", 1))], lambda: True, 0.0, log,
                             cast(LabControl, cast(Any, lab)),
                             Targets(lambda: (1, [2, 3]), coordinator=lambda: 4,
                                     share_coordinator=lambda: 5))
    injector.run()
    assert lab.calls == calls
    assert [(e.kind, e.detail) for e in log.events()] == events
    assert injector.errors == []


def test_a_follower_fault_without_a_follower_signals_nothing() -> None:
    lab = RecordingLab()
    injector = FaultInjector([parse_fault("pause-follower")], lambda: True, 0.0,
                             EventLog(time.monotonic()), cast(LabControl, cast(Any, lab)),
                             Targets(lambda: (1, [])))
    injector.run()
    assert lab.calls == []
    assert injector.errors == ["pause-follower: pause-follower: partition 0 has no such "
                               "broker right now"]


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_fault_shortens_the_request_timeout_by_its_own_property(name: str) -> None:
    spec = (FaultSpec(name),)
    conf = ProbeSettings(faults=spec).producer_config()
    expected = SHORT_REQUEST_TIMEOUT_MS if FAULTS[name].shortens_request_timeout else None
    assert conf.get("request.timeout.ms") == expected
    told = ProbeSettings(faults=spec, producer_properties={"request.timeout.ms": "5000"})
    assert told.producer_config()["request.timeout.ms"] == "5000"


def test_probe_and_the_matrix_run_a_pause_fault_with_the_same_producer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ProbeSettings] = []
    monkeypatch.setattr(matrix, "lab_for", lambda faults, state_dir: None)
    monkeypatch.setattr(matrix, "run_probe", lambda conn, settings, interrupted: seen.append(
        settings) or object())
    base = ProbeSettings(count=10)
    cells = matrix.build_grid(["all"], ["off"], [2], ["off"], ["pause-leader", "none"])
    matrix.run_matrix(cast(ConnectionSettings, None), base, cells, 1, threading.Event(),
                      lambda _: None)
    paused, unfaulted = seen
    alone = ProbeSettings(count=10, acks="all", idempotence=False,
                          faults=parse_faults(["pause-leader"], PRODUCER))
    assert paused.producer_config() == alone.producer_config()
    assert paused.producer_config()["request.timeout.ms"] == SHORT_REQUEST_TIMEOUT_MS
    assert "request.timeout.ms" not in unfaulted.producer_config()


def test_parse_faults_refuses_a_heal_without_its_fault_the_matrix_too() -> None:
    assert parse_faults(None, PRODUCER) == ()
    assert [f.kind for f in parse_faults(["exec:'a'", "exec-heal:'b'"], PRODUCER)] == [
        "exec", "exec-heal"]
    for refused in (lambda: parse_faults(["exec-heal:'b'"], PRODUCER),
                    lambda: matrix.build_grid(["all"], ["off"], [2], ["off"],
                                              ["exec-heal:'b'"])):
        with pytest.raises(InputError, match="exec-heal:'CMD' needs an exec:'CMD' fault"):
            refused()


class Session:
    def __init__(self) -> None:
        self.excuses: list[Callable[[], float]] = []

    def excuse(self, until: Callable[[], float]) -> None:
        self.excuses.append(until)


def test_start_injector_excuses_the_sessions_waits_and_starts_the_injector() -> None:
    session = Session()
    settings = ProbeSettings(faults=parse_faults(["exec:'true'"], PRODUCER),
                             fault_duration=0.0)
    injector = start_injector(settings, None, lambda: False, EventLog(time.monotonic()),
                              Targets(lambda: (1, [2, 3])), session, 7.0)
    try:
        assert injector.is_alive()
        assert injector.settle_s == 7.0 and injector.faults == list(settings.faults)
        assert session.excuses == [injector.excused_until]
    finally:
        injector.cancel()
        injector.join(5)


@pytest.mark.parametrize("command", [("probe",), ("probe", "consume"), ("canary",)],
                         ids=["probe", "consume", "canary"])
def test_no_lab_is_exit_2_before_kafka_is_asked_anything(command: tuple[str, ...],
                                                        tmp_path: Path) -> None:
    # 127.0.0.1:1 answers nothing: a command that asked it first would end in exit 3.
    result = run_in_process(*command, "-b", "127.0.0.1:1", "--fault", "kill-leader",
                            "--lab-state-dir", str(tmp_path / "none"))
    assert result.code == 2
    assert result.stderr == (f"kaudit: error: no lab in {tmp_path / 'none'} "
                             "(start one with `kaudit lab up`)\n")
