"""Start, stop, break and mend the lab cluster's processes.

Layout: ``--brokers`` broker processes (ids 1..N) and ``--controllers``
dedicated KRaft controllers (ids 100..). Controllers are separate from
brokers so that killing brokers, even most of them, leaves a working
metadata quorum: the ISR still shrinks and writes fail for the reason an
operator would see in production (NOT_ENOUGH_REPLICAS), not because the
quorum is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import client_config, new_admin
from kaudit.errors import InputError, LabError, LabStateError
from kaudit.lab import security as sec
from kaudit.lab.runtime import KafkaRuntime
from kaudit.lab.state import LabNode, LabState, NodeState, locked, node_state

log = logging.getLogger("kaudit.lab")

CONTROLLER_ID_BASE = 100
BROKER_HEAP = os.environ.get("KAUDIT_LAB_BROKER_HEAP", "512m")
CONTROLLER_HEAP = os.environ.get("KAUDIT_LAB_CONTROLLER_HEAP", "256m")
READY_TOPIC = "kaudit-lab-ready"

_LOG4J2 = """Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.clients
        level: WARN
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
"""

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_LAB_PORT = 10000


def _ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports nothing is listening on right now.

    They are taken below the kernel's ephemeral range when there is room: a broker that is
    killed and restarted must get its port back, and while it is down any outgoing
    connection could otherwise be handed that port as its source port.
    """
    import random

    top = _ephemeral_start()
    sockets: list[socket.socket] = []
    try:
        candidates = (random.sample(range(LOWEST_LAB_PORT, top), min(top - LOWEST_LAB_PORT, 200))
                      if top > LOWEST_LAB_PORT + 1000 else [])
        for port in [*candidates, *[0] * count]:
            if len(sockets) == count:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind(("127.0.0.1", port))  # 0 (the kernel's choice) only as a fallback
            except OSError:
                s.close()
                continue
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _properties_text(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _node_properties(
    node_id: int,
    role: str,
    port: int,
    directory: Path,
    voters: str,
    broker_count: int,
    extra: dict[str, str],
    secured: dict[str, str] | None = None,
) -> dict[str, str]:
    common = {
        "process.roles": role,
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(directory / "data"),
    }
    if role == "controller":
        return common | {
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        } | (secured or {})
    internal_rf = str(min(3, broker_count))
    # A secured lab names its client listener CLIENT (protocol from ``secured``).
    listener = "CLIENT" if secured else "PLAINTEXT"
    return (
        common
        | {
            "listeners": f"{listener}://127.0.0.1:{port}",
            "advertised.listeners": f"{listener}://127.0.0.1:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            # Internal topics must fit the lab's size; everything else keeps Kafka's defaults
            # so that `kaudit check` sees what a fresh real cluster looks like.
            "offsets.topic.replication.factor": internal_rf,
            "transaction.state.log.replication.factor": internal_rf,
            "transaction.state.log.min.isr": str(min(2, broker_count)),
            "group.initial.rebalance.delay.ms": "0",
        }
        | (secured or {})
        # "{port}" lets one --broker-config value name each broker's own port.
        | {k: v.replace("{port}", str(port)) for k, v in extra.items()}
    )


def _argv(
    runtime: KafkaRuntime, node: str, heap: str, directory: Path, main: Sequence[str]
) -> list[str]:
    return [
        runtime.java,
        f"-Xmx{heap}",
        "-Xms64m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={directory.parent / 'log4j2.yaml'}",
        f"-Dkaudit.lab.node={directory}",
        "-cp",
        runtime.classpath,
        *main,
    ]


def _format(
    runtime: KafkaRuntime, nodes: list[LabNode], cluster_id: str, extra: Sequence[str] = ()
) -> None:
    """Format every node's storage, in parallel (each is a JVM start)."""
    procs = []
    for node in nodes:
        config = Path(node.directory) / "server.properties"
        argv = _argv(
            runtime,
            node.role,
            "256m",
            Path(node.directory),
            ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c",
             str(config), *extra],
        )
        out = open(Path(node.directory) / "format.log", "w")  # noqa: SIM115
        procs.append(
            (
                node,
                subprocess.Popen(
                    argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                ),
                out,
            )
        )
    # Wait for every format to end before judging any: cleanup must not race a writer.
    codes = []
    for node, proc, out in procs:
        codes.append((node, proc.wait(timeout=180)))
        out.close()
    for node, code in codes:
        if code != 0:
            tail = _tail(Path(node.directory) / "format.log")
            raise LabError(f"formatting storage for node {node.id} failed (exit {code}): {tail}")


def _tail(path: Path, lines: int = 1) -> str:
    """The last meaningful lines of a log, joined on one line."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    interesting = [ln for ln in text if any(w in ln for w in ("ERROR", "Exception", "FATAL"))]
    picked = (interesting or text)[-lines:]
    return " | ".join(ln.strip() for ln in picked)[:500] or "(empty log)"


def _launch(node: LabNode) -> None:
    log_file = open(node.log_path, "ab")  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            node.argv,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=node.directory,
            start_new_session=True,
        )
    finally:
        log_file.close()
    node.pid = proc.pid


def create_lab(
    state_dir: Path,
    runtime: KafkaRuntime,
    brokers: int,
    controllers: int,
    broker_config: dict[str, str],
    security: sec.Security = sec.Security.plaintext,
) -> LabState:
    """Write configs and format storage for a new lab (nothing is started)."""
    if not 1 <= brokers < CONTROLLER_ID_BASE:
        raise InputError(f"--brokers must be between 1 and {CONTROLLER_ID_BASE - 1}")
    if controllers not in (1, 3, 5):
        raise InputError("--controllers must be 1, 3 or 5 (a KRaft quorum of odd size)")
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "log4j2.yaml").write_text(_LOG4J2, encoding="utf-8")
    ports = free_ports(brokers + controllers)
    controller_ids = [CONTROLLER_ID_BASE + i for i in range(controllers)]
    voters = ",".join(
        f"{cid}@127.0.0.1:{ports[brokers + i]}" for i, cid in enumerate(controller_ids)
    )
    cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    state = LabState(
        state_dir=str(state_dir),
        cluster_id=cluster_id,
        kafka_version=runtime.kafka_version,
        broker_config=broker_config,
        security=security.value,
    )
    secured: dict[str, dict[str, str]] = {}
    format_extra: list[str] = []
    if security is not sec.Security.plaintext:
        material = sec.generate(state_dir, security)
        secured = {
            "broker": sec.broker_properties(material, security),
            "controller": sec.controller_properties(material),
        }
        format_extra = sec.format_arguments(material, security)
    layout = [(i + 1, "broker", ports[i]) for i in range(brokers)] + [
        (cid, "controller", ports[brokers + i]) for i, cid in enumerate(controller_ids)
    ]
    for node_id, role, port in layout:
        directory = state_dir / f"{role}-{node_id}"
        directory.mkdir(parents=True, exist_ok=True)
        props = _node_properties(
            node_id,
            role,
            port,
            directory,
            voters,
            brokers,
            broker_config if role == "broker" else {},
            secured.get(role),
        )
        (directory / "server.properties").write_text(_properties_text(props), encoding="utf-8")
        heap = BROKER_HEAP if role == "broker" else CONTROLLER_HEAP
        argv = _argv(
            runtime, role, heap, directory, ["kafka.Kafka", str(directory / "server.properties")]
        )
        state.nodes.append(
            LabNode(id=node_id, role=role, port=port, directory=str(directory), argv=argv)
        )
    try:
        _format(runtime, state.nodes, cluster_id, format_extra)
    except BaseException:
        # Leave no half-formatted lab behind: the next `lab up` must start clean.
        for node in state.nodes:
            shutil.rmtree(node.directory, ignore_errors=True)
        raise
    state.save()
    return state


def _check_ports_free(state: LabState) -> None:
    for node in state.nodes:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            # As Kafka binds: connections of the last run in TIME_WAIT do not block it,
            # only another listener does.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", node.port))
            except OSError:
                raise LabStateError(
                    f"port {node.port} of node {node.id} is taken by another program",
                    hint="`kaudit lab down --purge` and `kaudit lab up` pick new ports",
                ) from None


def start_lab(state: LabState, *, wait_s: float, say: Say = _quiet) -> None:
    """Start every node that is down, then wait until the cluster takes RF=3 topics."""
    down = [n for n in state.nodes if node_state(n) is NodeState.down]
    for node in state.nodes:
        if node_state(node) is NodeState.paused:
            os.kill(node.pid or 0, signal.SIGCONT)
    # Controllers first: brokers register with them.
    for node in sorted(down, key=lambda n: n.role != "controller"):
        _launch(node)
    state.save()
    say(f"started {len(down)} node(s); waiting for {len(state.brokers)} brokers to register")
    wait_ready(state, wait_s)


def live_brokers(admin: Any) -> set[int]:
    """The ids of the registered, unfenced brokers, from a metadata request.

    Not DescribeCluster: librdkafka sends that to the broker the metadata names as the
    controller, and a KRaft broker may name one that was just killed (it is fenced only
    when its session expires); the client then times out on every call until it refreshes
    its metadata, minutes later. A metadata request goes to any broker that answers."""
    return set(admin.list_topics(timeout=5).brokers)


def wait_ready(state: LabState, wait_s: float) -> None:
    """Block until all brokers are registered and a replicated topic can be created."""
    deadline = time.monotonic() + wait_s
    admin = new_admin(_lab_client_config(state))
    rf = min(3, len(state.brokers))
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        _raise_if_node_died(state)
        try:
            registered = live_brokers(admin)
            if len(registered) >= len(state.brokers):
                fut = admin.create_topics(
                    [client.NewTopic(READY_TOPIC, 1, rf)], operation_timeout=10, request_timeout=10
                )[READY_TOPIC]
                try:
                    fut.result(timeout=12)
                except client.KafkaException as exc:
                    if exc.args[0].name() != "TOPIC_ALREADY_EXISTS":
                        raise
                admin.delete_topics([READY_TOPIC], operation_timeout=10)[READY_TOPIC].result(12)
                return
            last_error = f"{len(registered)} of {len(state.brokers)} brokers registered"
        except Exception as exc:  # any client error here just means "not ready yet"
            last_error = str(exc)[:200]
        time.sleep(0.5)
    raise LabError(
        f"lab not ready after {wait_s:g}s: {last_error}",
        hint=f"broker logs are in {state.state_dir}",
    )


def _lab_client_config(state: LabState) -> dict[str, Any]:
    """librdkafka settings for the lab's own work: the super user on a secured lab."""
    return client_config(state.connection(sec.ADMIN))


def _raise_if_node_died(state: LabState) -> None:
    for node in state.nodes:
        if node_state(node) is NodeState.down:
            raise LabError(
                f"{node.role} {node.id} exited during start: {_tail(node.log_path)}",
                hint=f"full log: {node.log_path}",
            )


def lab_up(
    state_dir: Path,
    runtime_factory: Callable[[], KafkaRuntime],
    *,
    brokers: int,
    controllers: int,
    broker_config: dict[str, str],
    wait_s: float,
    security: sec.Security | None = None,
    say: Say = _quiet,
) -> LabState:
    """Create (or restart) the lab in ``state_dir`` and wait for it to be ready."""
    with locked(state_dir):
        existing = None
        with contextlib.suppress(LabStateError):
            existing = LabState.load(state_dir)
        if existing is not None:
            live = [n for n in existing.nodes if node_state(n) is not NodeState.down]
            if live and len(live) == len(existing.nodes):
                raise LabStateError(
                    f"a lab is already running in {state_dir} (bootstrap {existing.bootstrap})",
                    hint="use it, or stop it with `kaudit lab down`, or pass another --state-dir",
                )
            if len(existing.brokers) != brokers or len(existing.controllers) != controllers:
                raise LabStateError(
                    f"the lab in {state_dir} has {len(existing.brokers)} brokers and "
                    f"{len(existing.controllers)} controller(s)",
                    hint="`kaudit lab down --purge` first to change its size",
                )
            if broker_config and broker_config != existing.broker_config:
                raise LabStateError(
                    "--broker-config differs from the stopped lab's",
                    hint="`kaudit lab down --purge` first to change it",
                )
            if security is not None and security.value != existing.security:
                raise LabStateError(
                    f"the lab in {state_dir} was created with --security {existing.security}",
                    hint="`kaudit lab down --purge` first to change it",
                )
            if not live:
                _check_ports_free(existing)
            say(f"restarting the existing lab in {state_dir}")
            state = existing
        else:
            runtime = runtime_factory()
            say(
                f"formatting {brokers} broker(s) and {controllers} controller(s), "
                f"Kafka {runtime.kafka_version}"
                + (f", secured with {security}" if security else "")
            )
            state = create_lab(state_dir, runtime, brokers, controllers, broker_config,
                               security or sec.Security.plaintext)
        try:
            start_lab(state, wait_s=wait_s, say=say)
            if state.security != sec.Security.plaintext:
                sec.grant_user_acls(_lab_client_config(state), timeout=30)
        except BaseException:
            _stop_nodes(state, state.nodes, signal.SIGKILL, wait_s=10)
            state.save()
            raise
        return state


def _stop_nodes(
    state: LabState, nodes: list[LabNode], sig: signal.Signals, wait_s: float
) -> list[LabNode]:
    """Signal ``nodes`` and wait for them to exit; returns those still alive."""
    targets = [n for n in nodes if node_state(n) is not NodeState.down]
    for node in targets:
        if node_state(node) is NodeState.paused:
            os.kill(node.pid or 0, signal.SIGCONT)  # a stopped JVM cannot act on TERM
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid or 0, sig)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        alive = [n for n in targets if node_state(n) is not NodeState.down]
        if not alive:
            return []
        time.sleep(0.2)
    return [n for n in targets if node_state(n) is not NodeState.down]


def lab_down(state_dir: Path, *, purge: bool, say: Say = _quiet) -> LabState | None:
    """Stop every node (brokers first, so they shut down cleanly); ``purge`` deletes all."""
    with locked(state_dir):
        try:
            state = LabState.load(state_dir)
        except LabStateError:
            if (
                purge
                and state_dir.exists()
                and not any(p.name != ".lock" for p in state_dir.iterdir())
            ):
                shutil.rmtree(state_dir)
            raise
        for group in (state.brokers, state.controllers):
            left = _stop_nodes(state, group, signal.SIGTERM, wait_s=30)
            if left:
                say(
                    "node(s) "
                    + ", ".join(str(n.id) for n in left)
                    + " did not stop in 30s; killing"
                )
                _stop_nodes(state, left, signal.SIGKILL, wait_s=10)
        for node in state.nodes:
            node.pid = None
        state.save()
    if purge:
        if not (state_dir / "lab.json").exists():
            raise LabStateError(f"{state_dir} does not look like a lab; not deleting it")
        shutil.rmtree(state_dir)
        return None
    return state


SIGNALS = {"TERM": signal.SIGTERM, "KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}


def lab_kill(state_dir: Path, node_id: int, signal_name: str, *, wait_s: float = 30) -> LabNode:
    """Send TERM (controlled shutdown), KILL (crash) or STOP (freeze) to one node."""
    sig = SIGNALS[signal_name]
    state = LabState.load(state_dir)
    node = state.node(node_id)
    current = node_state(node)
    if current is NodeState.down:
        raise LabStateError(f"{node.role} {node_id} is already down")
    if sig is signal.SIGSTOP:
        if current is NodeState.paused:
            raise LabStateError(f"{node.role} {node_id} is already paused")
        os.kill(node.pid or 0, sig)
        _await_state(node, NodeState.paused, wait_s)
        return node
    left = _stop_nodes(state, [node], sig, wait_s=wait_s)
    if left:
        raise LabError(
            f"{node.role} {node_id} did not exit within {wait_s:g}s of SIG{signal_name}",
            hint="try --signal KILL",
        )
    node.pid = None
    state.save()
    return node


def lab_start(state_dir: Path, node_id: int, *, wait_s: float) -> tuple[LabNode, str]:
    """Resume a paused node or restart a dead one; returns the node and what was done."""
    with locked(state_dir):
        state = LabState.load(state_dir)
        node = state.node(node_id)
        current = node_state(node)
        if current is NodeState.running:
            return node, "already running"
        if current is NodeState.paused:
            _resume(state, [node], wait_s)
            return node, "resumed"
        _launch(node)
        state.save()
        if node.role == "broker":
            _wait_registered(state, node, wait_s)
        return node, "restarted"


def lab_resume(state_dir: Path, node_ids: list[int], *, wait_s: float) -> None:
    """Resume several paused nodes at once (each one's freeze ends at the same moment), then
    wait until each runs and, for brokers, is registered again."""
    with locked(state_dir):
        state = LabState.load(state_dir)
        nodes = [state.node(i) for i in node_ids]
        _resume(state, [n for n in nodes if node_state(n) is NodeState.paused], wait_s)


def _resume(state: LabState, nodes: list[LabNode], wait_s: float) -> None:
    for node in nodes:
        os.kill(node.pid or 0, signal.SIGCONT)
    for node in nodes:
        _await_state(node, NodeState.running, wait_s)
    for node in nodes:
        if node.role == "broker":
            # A pause longer than the broker session gets the broker fenced until its
            # next heartbeat. Its own metadata is stale, so ask the others.
            others = [b for b in state.brokers
                      if b is not node and node_state(b) is NodeState.running]
            _wait_registered(state, node, wait_s, ask=others or [node])


def _await_state(node: LabNode, want: NodeState, wait_s: float) -> None:
    # STOP and CONT reach a JVM's threads one by one: /proc shows the new state only once all
    # of them have it, so the status printed right after would otherwise be the old one.
    deadline = time.monotonic() + wait_s
    while (current := node_state(node)) is not want:
        if current is NodeState.down or time.monotonic() >= deadline:
            raise LabError(f"{node.role} {node.id} is {current.value}, not {want.value}, "
                           f"{wait_s:g}s after the signal")
        time.sleep(0.02)


def _wait_registered(state: LabState, node: LabNode, wait_s: float,
                     ask: list[LabNode] | None = None) -> None:
    """Wait until the brokers in ``ask`` (by default ``node`` itself) list ``node`` as a live,
    unfenced broker."""
    # By default ask the restarted broker itself: right after a SIGKILL the cluster still
    # lists its old registration until the session expires, but only a started broker
    # answers on its port (a broker serves clients only once it has caught up and been
    # unfenced).
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in ask or [node])
    admin = new_admin(_lab_client_config(state) | {"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if node_state(node) is NodeState.down:
            raise LabError(f"broker {node.id} exited during start: {_tail(node.log_path)}")
        try:
            if node.id in live_brokers(admin):
                return
        except Exception:  # not answering yet
            pass
        time.sleep(0.5)
    raise LabError(
        f"broker {node.id} did not register within {wait_s:g}s", hint=f"log: {node.log_path}"
    )
