"""Start, stop, break and mend the lab cluster's processes.

A new lab is laid out by :mod:`kaudit.lab.layout` (ports, configs, storage); its
processes are started and signalled by :mod:`kaudit.lab.process`. Here: the
operations of ``kaudit lab`` and of the probe's faults, and the waits until
the cluster (or one broker) answers again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import client_config, new_admin
from kaudit.errors import InputError, LabError, LabStateError
from kaudit.lab import security as sec
from kaudit.lab import tiered as tiered_storage
from kaudit.lab.brokerconfig import BrokerConfig
from kaudit.lab.connect import add_worker, wait_worker_ready
from kaudit.lab.layout import LabShape, check_ports_free, create_lab, free_ports
from kaudit.lab.process import (
    SIGNALS,
    await_state,
    launch,
    log_tail,
    nodes_running_from,
    raise_if_node_died,
    stop_nodes,
    wait_listening,
)
from kaudit.lab.quorum import Quorum
from kaudit.lab.runtime import KafkaRuntime
from kaudit.lab.state import STATE_FILE, LabNode, LabState, NodeState, locked, node_state
from kaudit.waiting import Deadline

log = logging.getLogger("kaudit.lab")

READY_TOPIC = "kaudit-lab-ready"

Say = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def start_lab(state: LabState, *, wait_s: float, say: Say = _quiet) -> None:
    """Start every node that is down, then wait until the cluster takes RF=3 topics (and a
    Connect worker, started once it does, answers)."""
    down = [n for n in state.nodes if node_state(n) is NodeState.down]
    for node in state.nodes:
        if node_state(node) is NodeState.paused:
            os.kill(node.pid or 0, signal.SIGCONT)
    kafka = [n for n in down if n.role != "connect"]
    # Controllers first: brokers register with them.
    for node in sorted(kafka, key=lambda n: n.role != "controller"):
        launch(node)
    state.save()
    say(f"started {len(kafka)} node(s); waiting for {len(state.brokers)} brokers to register")
    wait_ready(state, wait_s, say)
    workers = [n for n in down if n.role == "connect"]
    for node in workers:
        launch(node)
    state.save()
    for node in workers:
        say(f"started Kafka Connect (node {node.id}); waiting for its REST API on port "
            f"{node.port}")
        wait_worker_ready(node, wait_s)


def live_brokers(admin: Any) -> set[int]:
    """The ids of the registered, unfenced brokers, from a metadata request.

    Not DescribeCluster: librdkafka sends that to the broker the metadata names as the
    controller, and a KRaft broker may name one that was just killed (it is fenced only
    when its session expires); the client then times out on every call until it refreshes
    its metadata, minutes later. A metadata request goes to any broker that answers."""
    return set(admin.list_topics(timeout=5).brokers)


class BrokerView:
    """The live brokers as the lab's own client sees them, from a client that is replaced
    when it may have lost every broker.

    A broker resumed from a pause answers from its stale view at first, in which every
    broker may be fenced: librdkafka then drops all the brokers it knew and has none left
    to ask until its re-bootstrap, minutes later (librdkafka issue 5301). Broker waits
    asked such a client for two minutes and failed. A new client starts again from the
    bootstrap list."""

    RENEW_EVERY_S = 1.0

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config
        self.admin = new_admin(config)
        self._renewed = Deadline(self.RENEW_EVERY_S)

    def live(self) -> set[int]:
        """The live broker ids; empty when no broker answered or none was named."""
        try:
            live = live_brokers(self.admin)
        except Exception:  # not answering yet
            live = set()
        if not live and self._renewed.expired():
            self.admin = new_admin(self._config)
            self._renewed = Deadline(self.RENEW_EVERY_S)
        return live


KILL_WAIT_S = 60.0
"""How long SIGKILLed nodes may take to be gone (they always go; a busy machine is slow)."""

STILL_WAITING_EVERY_S = 10.0
"""How often a wait for the brokers says it is still waiting (a first start on a busy
machine takes most of a minute)."""


def wait_ready(state: LabState, wait_s: float, say: Say = _quiet) -> None:
    """Block until all brokers are registered and a replicated topic can be created;
    ``say`` how many are registered whenever that changes, and every
    :data:`STILL_WAITING_EVERY_S` that nothing did."""
    deadline = Deadline(wait_s)
    view = BrokerView(_lab_client_config(state))
    rf = min(3, len(state.brokers))
    last_error = "no answer yet"
    seen, quiet = -1, Deadline(STILL_WAITING_EVERY_S)
    while not deadline.expired():
        raise_if_node_died(state)
        if quiet.expired():
            say(f"still waiting after {deadline.seconds - deadline.left():.0f}s: {last_error}")
            quiet.extend(STILL_WAITING_EVERY_S)
        try:
            registered = view.live()
            admin = view.admin
            if len(registered) != seen and len(registered) < len(state.brokers):
                seen = len(registered)
                say(f"{seen} of {len(state.brokers)} brokers registered")
                quiet.extend(STILL_WAITING_EVERY_S)
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


def lab_up(
    state_dir: Path,
    runtime_factory: Callable[[], KafkaRuntime],
    *,
    brokers: int | None,
    controllers: int | None,
    broker_config: BrokerConfig | dict[str, str],
    wait_s: float,
    security: sec.Security | None = None,
    connect: dict[str, str] | None = None,
    quorum: Quorum | None = None,
    tiered: bool = False,
    say: Say = _quiet,
) -> LabState:
    """Create (or restart) the lab in ``state_dir`` and wait for it to be ready. ``connect``
    (worker settings, maybe none) adds a Kafka Connect worker if the lab has none;
    ``quorum`` (None: static for a new lab) and ``tiered`` shape a new lab only."""
    if not isinstance(broker_config, BrokerConfig):
        broker_config = BrokerConfig(dict(broker_config))
    with locked(state_dir):
        existing = None
        live: list[LabNode] = []
        with contextlib.suppress(LabStateError):
            existing = LabState.load(state_dir)
        if existing is not None:
            live = [n for n in existing.nodes if node_state(n) is not NodeState.down]
            adding = connect is not None and not existing.connect_workers
            if live and len(live) == len(existing.nodes) and not adding:
                raise LabStateError(
                    f"a lab is already running in {state_dir} (bootstrap {existing.bootstrap})",
                    hint="use it, or stop it with `kaudit lab down`, or pass another --state-dir",
                )
            _refuse_other_shape(existing, brokers, controllers, broker_config, security,
                                quorum, tiered)
            if not live:
                check_ports_free(existing)
            say(f"restarting the existing lab in {state_dir}")
            state = existing
            if adding:
                _add_worker(state, runtime_factory(), connect or {}, say)
        else:
            brokers = 3 if brokers is None else brokers
            controllers = 1 if controllers is None else controllers
            shape = LabShape(broker_config, security or sec.Security.plaintext,
                             quorum or Quorum.static)
            state, runtime = _new_lab(state_dir, runtime_factory, brokers, controllers, shape,
                                      tiered, say)
            if connect is not None:
                _add_worker(state, runtime, connect, say)
        try:
            start_lab(state, wait_s=wait_s, say=say)
            if state.security != sec.Security.plaintext:
                sec.grant_user_acls(_lab_client_config(state), timeout=30)
        except BaseException:
            # What this call started goes; a running lab a worker was added to stays up.
            # A SIGKILLed JVM is gone within moments, but on a busy machine not always
            # within 10 s (a CI job's cancel left three brokers running so): wait it out.
            stop_nodes([n for n in state.nodes if n not in live], signal.SIGKILL,
                       wait_s=KILL_WAIT_S)
            state.save()
            raise
        return state


def _new_lab(state_dir: Path, runtime_factory: Callable[[], KafkaRuntime], brokers: int,
             controllers: int, shape: LabShape, tiered: bool,
             say: Say) -> tuple[LabState, KafkaRuntime]:
    """Lay out and format a new lab (nothing started); what cannot be made is refused
    before any jar is fetched."""
    shape.broker_config.check_ids(range(1, brokers + 1))
    if tiered and shape.security is not sec.Security.plaintext:
        raise InputError("--tiered-storage runs on a plaintext lab only (its metadata "
                         "manager's clients would need the secured listener's settings)")
    runtime = runtime_factory()
    if tiered:
        shape = replace(shape, tiered_jars=tiered_storage.storage_jars(runtime.kafka_version))
    say(
        f"formatting {brokers} broker(s) and {controllers} controller(s) "
        f"({shape.quorum} quorum), Kafka {runtime.kafka_version}"
        + (f", secured with {shape.security}" if shape.security is not sec.Security.plaintext
           else "")
        + (", tiered storage" if tiered else "")
    )
    return create_lab(state_dir, runtime, brokers, controllers, shape), runtime


def _refuse_other_shape(existing: LabState, brokers: int | None, controllers: int | None,
                        broker_config: BrokerConfig, security: sec.Security | None,
                        quorum: Quorum | None, tiered: bool) -> None:
    """A LabStateError when ``lab up``'s options ask for another lab than the stopped one
    in ``existing`` (what is not given is the lab's own)."""
    where = existing.state_dir
    if (brokers not in (None, len(existing.brokers))
            or controllers not in (None, len(existing.controllers))):
        raise LabStateError(
            f"the lab in {where} has {len(existing.brokers)} brokers and "
            f"{len(existing.controllers)} controller(s)",
            hint="`kaudit lab down --purge` first to change its size",
        )
    ids = [b.id for b in existing.brokers]
    if broker_config:
        broker_config.check_ids(ids)
        if broker_config.per_broker(ids) != existing.broker_settings.per_broker(ids):
            raise LabStateError(
                "--broker-config differs from the stopped lab's",
                hint="`kaudit lab down --purge` first to change it",
            )
    if security is not None and security.value != existing.security:
        raise LabStateError(
            f"the lab in {where} was created with --security {existing.security}",
            hint="`kaudit lab down --purge` first to change it",
        )
    if quorum is not None and quorum.value != existing.quorum:
        raise LabStateError(
            f"the lab in {where} has a {existing.quorum} controller quorum",
            hint="`kaudit lab down --purge` first to change it",
        )
    if tiered and not existing.tiered_storage:
        raise LabStateError(
            f"the lab in {where} was created without --tiered-storage",
            hint="`kaudit lab down --purge` first to add it",
        )


def _add_worker(state: LabState, runtime: KafkaRuntime, settings: dict[str, str],
                say: Say) -> None:
    say("adding a Kafka Connect worker (its plugins are fetched with mvn once)")
    add_worker(state, runtime, free_ports(1)[0], settings)
    state.save()


def lab_down(state_dir: Path, *, purge: bool, say: Say = _quiet) -> LabState | None:
    """Stop every node (the Connect worker first, then the brokers, so that each shuts down
    cleanly); ``purge`` deletes all."""
    with locked(state_dir):
        try:
            state = LabState.load(state_dir)
        except LabStateError:
            if purge and state_dir.exists():
                if (state_dir / STATE_FILE).exists():
                    # lab.json cannot be read, so its nodes are found by their command lines.
                    _purge_unreadable(state_dir, say)
                    return None
                if not any(p.name != ".lock" for p in state_dir.iterdir()):
                    shutil.rmtree(state_dir)
            raise
        for group in (state.connect_workers, state.brokers, state.controllers):
            left = stop_nodes(group, signal.SIGTERM, wait_s=30)
            if left:
                say(
                    "node(s) "
                    + ", ".join(str(n.id) for n in left)
                    + " did not stop in 30s; killing"
                )
                stop_nodes(left, signal.SIGKILL, wait_s=10)
        for node in state.nodes:
            node.pid = None
        state.save()
    if purge:
        if not (state_dir / "lab.json").exists():
            raise LabStateError(f"{state_dir} does not look like a lab; not deleting it")
        shutil.rmtree(state_dir)
        return None
    return state


def _purge_unreadable(state_dir: Path, say: Say) -> None:
    """Kill whatever still runs from a lab whose lab.json is unreadable, then delete it."""
    running = nodes_running_from(state_dir)
    left = stop_nodes(running, signal.SIGKILL, wait_s=10)
    if left:
        raise LabError(f"process(es) {', '.join(str(n.pid) for n in left)} of the lab in "
                       f"{state_dir} did not exit after SIGKILL; not deleting it")
    if running:
        say(f"killed {len(running)} process(es) of the unreadable lab in {state_dir}")
    shutil.rmtree(state_dir)


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
        await_state(node, NodeState.paused, wait_s)
        return node
    left = stop_nodes([node], sig, wait_s=wait_s)
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
        launch(node)
        state.save()
        if node.role == "broker":
            _wait_registered(state, node, wait_s)
        elif node.role == "controller":
            # It listens once its raft client runs; a voter then catches up with the
            # leader's log within moments (`kafka-metadata-quorum describe` shows it).
            wait_listening(node, wait_s)
        elif node.role == "connect":
            wait_worker_ready(node, wait_s)
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
        await_state(node, NodeState.running, wait_s)
    for node in nodes:
        if node.role == "broker":
            # A pause longer than the broker session gets the broker fenced until its
            # next heartbeat. Its own metadata is stale, so ask the others.
            others = [b for b in state.brokers
                      if b is not node and node_state(b) is NodeState.running]
            _wait_registered(state, node, wait_s, ask=others or [node])


def _wait_registered(state: LabState, node: LabNode, wait_s: float,
                     ask: list[LabNode] | None = None) -> None:
    """Wait until the brokers in ``ask`` (by default ``node`` itself) list ``node`` as a live,
    unfenced broker."""
    # By default ask the restarted broker itself: right after a SIGKILL the cluster still
    # lists its old registration until the session expires, but only a started broker
    # answers on its port (a broker serves clients only once it has caught up and been
    # unfenced).
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in ask or [node])
    view = BrokerView(_lab_client_config(state) | {"bootstrap.servers": bootstrap})
    deadline = Deadline(wait_s)
    while not deadline.expired():
        if node_state(node) is NodeState.down:
            raise LabError(f"broker {node.id} exited during start: {log_tail(node.log_path)}")
        if node.id in view.live():
            return
        # Each answer is a metadata request on loopback: asking often costs nothing, and
        # every broker restart (a fault's heal, a rolling restart) waits on it.
        time.sleep(0.1)
    raise LabError(
        f"broker {node.id} did not register within {wait_s:g}s", hint=f"log: {node.log_path}"
    )
