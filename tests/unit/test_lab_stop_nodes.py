"""Stopping lab nodes: wait for them to exit, and name those that outlive the wait."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from kaudit.lab.process import stop_nodes
from kaudit.lab.state import LabNode, NodeState, node_state

# A child that shrugs TERM off, as a broker stuck in its controlled shutdown would.
_IGNORES_TERM = ("import signal, time\n"
                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                 "print('ready', flush=True); time.sleep(60)")


def _started(tmp_path: Path) -> tuple[LabNode, subprocess.Popen[str]]:
    node = LabNode(id=1, role="broker", port=1, directory=str(tmp_path / "broker-1"), argv=[])
    proc = subprocess.Popen([sys.executable, "-c", _IGNORES_TERM, node.marker],
                            stdout=subprocess.PIPE, text=True)
    # Until the child has exec'd, its command line is still ours, without the marker.
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    node.pid = proc.pid
    return node, proc


def test_a_node_that_outlives_the_wait_is_returned(tmp_path: Path) -> None:
    node, proc = _started(tmp_path)
    try:
        started = time.monotonic()
        assert stop_nodes([node], signal.SIGTERM, wait_s=0.5) == [node]
        assert 0.5 <= time.monotonic() - started < 5
        assert node_state(node) is NodeState.running
    finally:
        proc.kill()
        proc.wait()


def test_a_node_that_exits_is_not_waited_for_to_the_end(tmp_path: Path) -> None:
    node, proc = _started(tmp_path)
    try:
        started = time.monotonic()
        assert stop_nodes([node], signal.SIGKILL, wait_s=30) == []
        assert time.monotonic() - started < 5
    finally:
        proc.kill()
        proc.wait()
