"""The lab nodes' processes: start one, signal some and wait for them to stop, wait for one
to reach a state, read the tail of a log."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from kaudit.errors import LabError
from kaudit.jvm import ClassArchive
from kaudit.lab.state import LabNode, LabState, NodeState, command_line, node_state
from kaudit.waiting import Deadline, wait_for

SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}
"""What ``kaudit lab kill --signal`` sends: a controlled shutdown, a crash or a freeze."""


START_MARK = "[kaudit lab] starting "
"""Begins the line ``launch`` writes to a node's log before each start: the log is appended to
across restarts, and why a node died on its last start is told by what follows it."""


def since_last_start(text: list[str]) -> tuple[int, list[str]]:
    """How many starts a node's log records, and its lines since the last one (all of them
    in a log without start marks)."""
    starts = [i for i, ln in enumerate(text) if ln.startswith(START_MARK)]
    return len(starts), text[starts[-1] + 1:] if starts else text


def log_tail(path: Path, lines: int = 1) -> str:
    """The last meaningful lines of a log since the node's last start, joined on one line."""
    try:
        _, text = since_last_start(path.read_text(errors="replace").splitlines())
    except OSError:
        return "(no log)"
    interesting = [ln for ln in text if any(w in ln for w in ("ERROR", "Exception", "FATAL"))]
    picked = (interesting or text)[-lines:]
    return " | ".join(ln.strip() for ln in picked)[:500] or "(empty log)"


def kafka_archive(argv: list[str]) -> ClassArchive | None:
    """The class archive of the Kafka JVMs started with ``argv``'s Java and classpath
    (brokers, controllers, the storage tool); None for a command line without one."""
    if "-cp" not in argv[:-1]:
        return None
    classpath = argv[argv.index("-cp") + 1]
    # The jars' names and times: jars replaced in place (a --kafka-home upgraded) make a
    # new archive rather than one the JVM would refuse.
    jars = sorted(Path(classpath[:-1]).glob("*.jar")) if classpath.endswith("/*") else []
    stamps = []
    for jar in jars:
        with contextlib.suppress(OSError):
            stamps.append(f"{jar.name}:{jar.stat().st_mtime_ns}")
    return ClassArchive("kafka", argv[0], [classpath, *stamps])


def archive_options(node: LabNode) -> list[str]:
    """The class archive's options for ``node``'s next start (where the JVM writes it is
    recorded in ``node``)."""
    node.archive_partial = None
    archive = kafka_archive(node.argv) if node.role in ("broker", "controller") else None
    if archive is None:
        return []
    # Brokers write it: they load nearly every class a controller does, and more.
    extra = archive.options(write=node.role == "broker",
                            writer=f"{node.role}-{node.id}-{time.time_ns()}")
    node.archive_partial = str(archive.partial) if archive.partial else None
    return extra


def launch(node: LabNode) -> None:
    """Start ``node``'s process in a session of its own, its output appended to its log.

    A broker or controller starts from the lab's class archive when there is one; without
    one, a broker writes it as it exits (see :func:`settle_archives`)."""
    argv = [node.argv[0], *archive_options(node), *node.argv[1:]]
    log_file = open(node.log_path, "ab")  # noqa: SIM115
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        log_file.write(f"{START_MARK}{node.role} {node.id} at {stamp}\n".encode())
        log_file.flush()
        proc = subprocess.Popen(
            argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=node.directory,
            start_new_session=True,
        )
    finally:
        log_file.close()
    node.pid = proc.pid


def nodes_running_from(state_dir: Path) -> list[LabNode]:
    """The lab processes of ``state_dir`` found by their command line's marker, for when its
    lab.json cannot tell them (unreadable): each as a node with just its pid and directory."""
    # The marker holds the node's directory as the lab was made: as given, or resolved.
    prefixes = tuple({LabNode(0, "", 0, f"{d}/", []).marker
                      for d in (state_dir, state_dir.resolve())})
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        args = command_line(int(proc.name)) or []  # gone meanwhile: nothing to match
        marker = next((a for a in args if a.startswith(prefixes)), None)
        if marker is not None:
            directory = marker.split("=", 1)[1]
            found.append(LabNode(0, "node", 0, directory, [], pid=int(proc.name)))
    return found


def stop_nodes(nodes: list[LabNode], sig: signal.Signals, wait_s: float) -> list[LabNode]:
    """Signal ``nodes`` and wait for them to exit; returns those still alive."""
    targets = [n for n in nodes if node_state(n) is not NodeState.down]
    for node in targets:
        if node_state(node) is NodeState.paused:
            os.kill(node.pid or 0, signal.SIGCONT)  # a stopped JVM cannot act on TERM
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid or 0, sig)

    def still_alive() -> list[LabNode]:
        return [n for n in targets if node_state(n) is not NodeState.down]

    wait_for(lambda: not still_alive(), wait_s, every=0.2)
    left = still_alive()
    settle_archives([n for n in targets if n not in left], clean=sig is signal.SIGTERM)
    return left


def settle_archives(nodes: list[LabNode], clean: bool) -> None:
    """``nodes`` have exited: the class archive each wrote on its way out is put in place
    when it stopped ``clean`` (SIGTERM, and it exited by itself), dropped otherwise."""
    for node in nodes:
        partial, node.archive_partial = node.archive_partial, None
        archive = kafka_archive(node.argv) if partial else None
        if partial and archive is not None:
            archive.adopt(Path(partial), clean)


def await_state(node: LabNode, want: NodeState, wait_s: float) -> None:
    """Wait until ``node`` is ``want`` after a signal; a LabError if it is down or late."""
    # STOP and CONT reach a JVM's threads one by one: /proc shows the new state only once all
    # of them have it, so the status printed right after would otherwise be the old one.
    deadline = Deadline(wait_s)
    while (current := node_state(node)) is not want:
        if current is NodeState.down or deadline.expired():
            raise LabError(f"{node.role} {node.id} is {current.value}, not {want.value}, "
                           f"{wait_s:g}s after the signal")
        time.sleep(0.02)


def wait_listening(node: LabNode, wait_s: float) -> None:
    """Wait until ``node`` takes connections on its port; a LabError if it exits or is
    late."""
    deadline = Deadline(wait_s)
    while not deadline.expired():
        if node_state(node) is NodeState.down:
            raise LabError(f"{node.role} {node.id} exited during start: "
                           f"{log_tail(node.log_path)}", hint=f"log: {node.log_path}")
        with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", node.port), timeout=1):
            return
        time.sleep(0.1)
    raise LabError(f"{node.role} {node.id} did not listen on port {node.port} within "
                   f"{wait_s:g}s", hint=f"log: {node.log_path}")


def raise_if_node_died(state: LabState) -> None:
    """A LabError naming the first Kafka node (broker or controller) whose process is gone,
    with its log's last line (a Connect worker starts once they are ready)."""
    for node in state.brokers + state.controllers:
        if node_state(node) is NodeState.down:
            raise LabError(
                f"{node.role} {node.id} exited during start: {log_tail(node.log_path)}",
                hint=f"full log: {node.log_path}",
            )
