"""One fault model: the registry is what the CLI's help and errors say, and what the
injector can inject."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from kaudit.errors import InputError
from kaudit.probe.faults.injector import FaultInjector
from kaudit.probe.faults.registry import (
    CANARY,
    CONSUMER,
    FAULTS,
    PRODUCER,
    SHARE,
    faults_of,
    parse_fault,
)
from tests.conftest import run_in_process


def _help_faults(*command: str) -> list[str]:
    """The faults the real ``--help`` of ``command`` names under --fault, as written."""
    result = run_in_process(*command, "--help")
    assert result.code == 0, result.stderr
    text = " ".join(result.stdout.split())
    block = re.search(r"--fault SPEC (.*?) repeatable", text)
    assert block, text
    # Help wraps lines at hyphens; joined back, each item is one usage.
    items = block.group(1).replace("- ", "-").replace("(lab);", ",").replace(
        "(any cluster);", ",").replace("(lab)", ",")
    return [i.strip() for i in items.split(",") if i.strip()]


@pytest.mark.parametrize("command,who", [(("probe",), PRODUCER),
                                          (("probe", "consume"), CONSUMER)])
def test_the_help_names_every_fault_the_command_takes(command: tuple[str, ...],
                                                      who: str) -> None:
    assert _help_faults(*command) == [f.usage() for f in faults_of(who)]


def test_every_registered_fault_but_exec_heal_has_an_injection_step() -> None:
    assert {name for name, fault in FAULTS.items()
            if fault.step is not None
            and callable(getattr(FaultInjector, f"_inject_{fault.step}", None))
            } == set(FAULTS) - {"exec-heal"}


def test_every_fault_is_taken_by_some_command() -> None:
    commands = (PRODUCER, CONSUMER, CANARY, SHARE)
    assert {f.name for c in commands for f in faults_of(c)} == set(FAULTS)


def test_the_canary_takes_the_producers_faults_but_restart_producer_and_its_own_stall() -> None:
    producer = {f.name for f in faults_of(PRODUCER)}
    canary = {f.name for f in faults_of(CANARY)}
    assert canary == (producer - {"restart-producer"}) | {"stall-reader"}
    assert parse_fault("stall-reader", CANARY).argument == "30"
    with pytest.raises(InputError, match="not a fault of kaudit probe: only of kaudit canary"):
        parse_fault("stall-reader:5", PRODUCER)


@pytest.mark.parametrize("text,command,message", [
    ("kill-everything", PRODUCER, "is not a fault (kill-leader, stop-leader"),
    ("kill-everything", CONSUMER, "is not a fault (kill-leader, kill-coordinator)"),
    ("kill-coordinator", PRODUCER, "is not a fault of kaudit probe: only of kaudit probe "
                                   "consume"),
    ("lose-responses", CONSUMER, "is not a fault of kaudit probe consume"),
    ("kill-leader:2", PRODUCER, "is not a fault"),
    ("kill-broker:x", PRODUCER, "expected a number, e.g. kill-broker:2"),
    ("exec:", PRODUCER, "needs a command"),
])
def test_a_fault_a_command_does_not_take_is_one_line(text: str, command: str,
                                                      message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        parse_fault(text, command)


def test_the_same_name_is_the_same_fault_everywhere() -> None:
    assert parse_fault("kill-leader", PRODUCER) == parse_fault("kill-leader", CONSUMER)
    assert parse_fault("exec:'kubectl delete pod kafka-0'").argument == (
        "kubectl delete pod kafka-0")


def test_the_registry_imports_without_kafka() -> None:
    code = ("import sys, kaudit.probe.faults.registry; "
            "print('confluent_kafka' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
