"""Telling a lab node's process apart: running, paused, down, or a reused pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kaudit.connection.settings import parse_key_values
from kaudit.errors import InputError, LabStateError
from kaudit.lab.layout import EPHEMERAL_RANGE, LOWEST_LAB_PORT, free_ports
from kaudit.lab.manager import lab_kill, lab_start
from kaudit.lab.process import launch, log_tail
from kaudit.lab.state import LabNode, LabState, NodeState, locked, node_state


def _node(tmp_path: Path) -> LabNode:
    return LabNode(id=1, role="broker", port=1, directory=str(tmp_path / "broker-1"), argv=[])


def _started(code: str, node: LabNode) -> subprocess.Popen[str]:
    """A Python child carrying ``node``'s marker, once it runs ``code`` (which prints "ready"):
    until the child has exec'd, its command line is still ours, without the marker."""
    proc = subprocess.Popen([sys.executable, "-c", code, node.marker],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_node_state_follows_the_process(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert node_state(node) is NodeState.down
    proc = _started("print('ready', flush=True); import time; time.sleep(60)", node)
    try:
        node.pid = proc.pid
        assert node_state(node) is NodeState.running
        proc.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 30  # a loaded machine delivers the STOP late
        while node_state(node) is not NodeState.paused and time.monotonic() < deadline:
            time.sleep(0.05)
        assert node_state(node) is NodeState.paused
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()
        assert node_state(node) is NodeState.down
    finally:
        proc.kill()


# Many threads, like a JVM: a STOP is only visible in /proc once every thread has taken it.
_THREADED = ("import threading, time\n"
             "for _ in range(200):\n"
             "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
             "print('ready', flush=True); time.sleep(60)")


def test_kill_stop_and_start_return_only_once_the_node_is_paused_or_running(
        tmp_path: Path) -> None:
    # A controller: a resumed broker is also waited for until the cluster lists it again.
    node = LabNode(id=100, role="controller", port=1, directory=str(tmp_path / "ctl"), argv=[])
    proc = _started(_THREADED, node)
    try:
        node.pid = proc.pid
        LabState(state_dir=str(tmp_path), cluster_id="c", kafka_version="4.3.1",
                 nodes=[node]).save()
        for _ in range(5):
            lab_kill(tmp_path, 100, "STOP")
            assert node_state(node) is NodeState.paused
            assert lab_start(tmp_path, 100, wait_s=30) == (node, "resumed")
            assert node_state(node) is NodeState.running
    finally:
        proc.kill()
        proc.wait()


def test_a_reused_pid_is_not_our_node(tmp_path: Path) -> None:
    node = _node(tmp_path)
    # Another process, once it runs (while it execs, its command line reads empty, which
    # counts as our node starting: test_a_node_whose_exec_is_under_way_is_not_taken_for_gone).
    other = _node(tmp_path / "other")
    proc = _started("print('ready', flush=True); import time; time.sleep(60)", other)
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


def test_free_ports_are_distinct_and_below_the_ephemeral_range() -> None:
    ports = free_ports(6)
    assert len(set(ports)) == 6
    ephemeral_start = int(EPHEMERAL_RANGE.read_text().split()[0])
    if ephemeral_start > LOWEST_LAB_PORT + 1000:  # room below it (the default starts at 32768)
        assert all(LOWEST_LAB_PORT <= p < ephemeral_start for p in ports), ports


def test_key_value_parsing() -> None:
    assert parse_key_values(["min.insync.replicas=2", " a =b=c"], "--broker-config") == {
        "min.insync.replicas": "2", "a": "b=c"}
    with pytest.raises(InputError, match="--broker-config 'nonsense'"):
        parse_key_values(["nonsense"], "--broker-config")


def test_the_log_tail_tells_why_the_last_start_failed_not_an_older_one(tmp_path: Path) -> None:
    # A node's log is appended to across restarts; an exception from its previous life
    # must not stand in for why it just died.
    node = _node(tmp_path)
    Path(node.directory).mkdir(parents=True)
    node.log_path.write_text("[2026-11-25] ERROR NotEnoughReplicasException: old news\n")
    node.argv = [sys.executable, "-c",
                 "print('INFO starting'); print('bind failed: port in use')"]
    launch(node)
    assert node.pid is not None
    os.waitpid(node.pid, 0)
    assert log_tail(node.log_path) == "bind failed: port in use"
    assert "old news" in node.log_path.read_text()  # kept, but before the start mark
    assert log_tail(node.log_path, lines=5) == "INFO starting | bind failed: port in use"


def test_a_log_without_start_marks_is_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "format.log"
    log.write_text("INFO formatting\nERROR bad cluster id\nINFO done\n")
    assert log_tail(log) == "ERROR bad cluster id"
    assert log_tail(tmp_path / "absent.log") == "(no log)"


@pytest.mark.parametrize("where,why", [("a-file", "File exists"),
                                       ("a-file/lab", "Not a directory")])
def test_a_state_dir_that_cannot_be_a_directory_is_an_input_error(tmp_path: Path, where: str,
                                                                  why: str) -> None:
    # It was an internal error (FileExistsError) from `kaudit lab up --state-dir FILE`.
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(LabStateError, match=f"cannot use it as the lab's directory: {why}$"), \
            locked(tmp_path / where):
        pass


def test_purging_a_lab_whose_state_is_unreadable_kills_its_processes_and_deletes_it(
        tmp_path: Path) -> None:
    # The error for an unreadable lab.json said to run `lab down --purge`, which then failed
    # with the same error. Its processes are found by the marker on their command lines.
    from kaudit.lab.manager import lab_down

    lab, other = tmp_path / "lab", tmp_path / "lab2"
    for d in (lab, other):
        (d / "broker-1").mkdir(parents=True)
    (lab / "lab.json").write_bytes(b"\xff not json")
    ours = _started("print('ready', flush=True); import time; time.sleep(60)",
                    LabNode(1, "broker", 1, str(lab / "broker-1"), []))
    theirs = _started("print('ready', flush=True); import time; time.sleep(60)",
                      LabNode(1, "broker", 1, str(other / "broker-1"), []))
    try:
        assert lab_down(lab, purge=True) is None
        # Gone long before its 60 s sleep ends (node_state may reap it first, so its exit
        # code can read 0 here rather than -SIGKILL).
        ours.wait(timeout=30)
        assert not Path(f"/proc/{ours.pid}").exists()
        assert not lab.exists()
        assert theirs.poll() is None and other.exists()  # a lab beside it is left alone
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()


def test_a_node_whose_exec_is_under_way_is_not_taken_for_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a JVM's launch its command line can read empty for a few milliseconds
    (seen once in 20 launches of java here): a lab check then must not say the node
    exited during start. Its process is alive; its arguments are not readable yet."""
    import kaudit.lab.state as lab_state

    node = _node(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        node.pid = proc.pid
        monkeypatch.setattr(lab_state, "command_line", lambda _pid: [""])
        assert node_state(node) is NodeState.running
        proc.kill()
        proc.wait()
        assert node_state(node) is NodeState.down  # gone is still gone
    finally:
        proc.kill()
