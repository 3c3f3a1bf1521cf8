"""The fleet tells a worker it stopped from one that crashed, also when the stop came
before the worker could handle it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kaudit.probe.consume.fleet import Fleet
from kaudit.probe.consume.journal import read_journal


def fleet_with_a_starting_worker(tmp_path: Path) -> tuple[Fleet, list[tuple[str, str]]]:
    """A fleet whose worker 2 is a process that has not installed a SIGTERM handler (a
    Python still starting, on a busy machine) and has written no journal."""
    events: list[tuple[str, str]] = []
    fleet = Fleet({}, tmp_path, lambda kind, text: events.append((kind, text)))
    fleet.procs[2] = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    fleet.incarnation[2] = 2
    return fleet, events


def test_a_worker_stopped_before_its_handler_stopped_and_did_not_crash(tmp_path: Path) -> None:
    fleet, events = fleet_with_a_starting_worker(tmp_path)
    fleet.stop_one(2)
    fleet.procs[2].wait(30)
    fleet.reap(restart=True)
    assert events == [("stopped", "worker 2.2 stopped")]
    assert (fleet.ended, fleet.restarts) == ({}, 0)


def test_a_worker_killed_before_its_journal_ended_without_one(tmp_path: Path) -> None:
    fleet, events = fleet_with_a_starting_worker(tmp_path)
    fleet.crash(2, anywhere=True)
    fleet.procs[2].wait(30)
    fleet.reap(restart=False)
    assert fleet.ended[(2, 2)][1] == "anywhere"
    assert events[-1] == ("ended", "worker 2.2 ended: anywhere")


def test_a_journal_never_opened_reads_as_empty(tmp_path: Path) -> None:
    assert read_journal(tmp_path / "w2-i2.journal") == []
