"""Telling a lab node's process apart: running, paused, down, or a reused pid."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kaudit.connect.settings import parse_key_values
from kaudit.errors import InputError, LabStateError
from kaudit.lab.manager import free_ports
from kaudit.lab.state import LabNode, LabState, NodeState, node_state


def _node(tmp_path: Path) -> LabNode:
    return LabNode(id=1, role="broker", port=1, directory=str(tmp_path / "broker-1"), argv=[])


def test_node_state_follows_the_process(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert node_state(node) is NodeState.down
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", node.marker])
    try:
        node.pid = proc.pid
        assert node_state(node) is NodeState.running
        proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while node_state(node) is not NodeState.paused and time.monotonic() < deadline:
            time.sleep(0.05)
        assert node_state(node) is NodeState.paused
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()
        assert node_state(node) is NodeState.down
    finally:
        proc.kill()


def test_a_reused_pid_is_not_our_node(tmp_path: Path) -> None:
    node = _node(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        node.pid = proc.pid
        assert node_state(node) is NodeState.down
    finally:
        proc.kill()
        proc.wait()


def test_state_round_trips_and_missing_lab_is_explained(tmp_path: Path) -> None:
    with pytest.raises(LabStateError, match="kaudit lab up"):
        LabState.load(tmp_path)
    state = LabState(state_dir=str(tmp_path), cluster_id="c", kafka_version="4.3.1",
                     nodes=[_node(tmp_path)])
    state.save()
    loaded = LabState.load(tmp_path)
    assert loaded == state and loaded.bootstrap == "127.0.0.1:1"
    with pytest.raises(LabStateError, match="no node 7"):
        loaded.node(7)
    (tmp_path / "lab.json").write_text("{not json")
    with pytest.raises(LabStateError, match="unreadable"):
        LabState.load(tmp_path)


def test_free_ports_are_distinct() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6


def test_key_value_parsing() -> None:
    assert parse_key_values(["min.insync.replicas=2", " a =b=c"], "--broker-config") == {
        "min.insync.replicas": "2", "a": "b=c"}
    with pytest.raises(InputError, match="--broker-config 'nonsense'"):
        parse_key_values(["nonsense"], "--broker-config")
