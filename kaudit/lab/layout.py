"""Lay out a new lab: its ports, each node's ``server.properties`` and command line, and
formatted storage.

Layout: ``--brokers`` broker processes (ids 1..N) and ``--controllers``
dedicated KRaft controllers (ids 100..). Controllers are separate from
brokers so that killing brokers, even most of them, leaves a working
metadata quorum: the ISR still shrinks and writes fail for the reason an
operator would see in production (NOT_ENOUGH_REPLICAS), not because the
quorum is gone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kaudit.connection.properties import properties_text
from kaudit.errors import InputError, LabError, LabStateError
from kaudit.lab import security as sec
from kaudit.lab import tiered as tiered_storage
from kaudit.lab.brokerconfig import BrokerConfig
from kaudit.lab.process import kafka_archive, log_tail
from kaudit.lab.quorum import Quorum, format_arguments, quorum_properties, voters
from kaudit.lab.runtime import KafkaRuntime
from kaudit.lab.state import LabNode, LabState

CONTROLLER_ID_BASE = 100
BROKER_HEAP = os.environ.get("KAUDIT_LAB_BROKER_HEAP", "512m")
CONTROLLER_HEAP = os.environ.get("KAUDIT_LAB_CONTROLLER_HEAP", "256m")

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


def check_ports_free(state: LabState) -> None:
    """Raise a LabStateError if another program listens on one of the nodes' ports."""
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


def _node_properties(
    node_id: int,
    role: str,
    port: int,
    directory: Path,
    quorum: dict[str, str],
    broker_count: int,
    extra: dict[str, str],
    secured: dict[str, str] | None = None,
    tiered: dict[str, str] | None = None,
) -> dict[str, str]:
    common = {
        "process.roles": role,
        "node.id": str(node_id),
        **quorum,
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(directory / "data"),
    }
    if role == "controller":
        return common | {
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        } | SHARE_GROUP_TIMING | (secured or {}) | (tiered or {})
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
        | dict.fromkeys(INTERNAL_PARTITION_SETTINGS, str(INTERNAL_PARTITIONS))
        | SHARE_GROUP_TIMING
        | (secured or {})
        | (tiered or {})
        # "{port}" lets one --broker-config value name each broker's own port.
        | {k: v.replace("{port}", str(port)) for k, v in extra.items()}
    )


INTERNAL_PARTITIONS = 5
INTERNAL_PARTITION_SETTINGS = ("offsets.topic.num.partitions",
                               "transaction.state.log.num.partitions",
                               "share.coordinator.state.topic.num.partitions")
"""Kafka's own state topics (consumer offsets, transactions, share-group state) get 5
partitions each, not Kafka's 50: every broker holds a replica of each, so each kill and
restart reloads them and moves their leaders and coordinators; with 150 of them a broker's
restart cost the lab about a third more CPU. Which partition a group or transactional id
maps to is all that changes; a group still has one coordinator, found as Kafka finds it."""


SHARE_GROUP_TIMING = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000",
}
"""A share group's record lock may be set as short as a second (Kafka's floor is 15 s), so
that ``probe share --slow-worker`` outlives its lock in seconds; members heartbeat every
second, not five, so that a new member gets its partitions a second after it joins, as a
consumer group's member does in the lab (``group.initial.rebalance.delay.ms=0``). The
controllers too: they validate a group's configs against their own."""

LAB_JIT = ("-XX:TieredStopAtLevel=1",)
"""The lab's JVMs compile with C1 only: they start often (every kill, restart and roll) and
carry a lab's light load, and C2's compiler threads would double the CPU a start costs
on a two-core laptop (and so the time every other node and client waits)."""


def _argv(
    runtime: KafkaRuntime, node: str, heap: str, directory: Path, main: Sequence[str]
) -> list[str]:
    return [
        runtime.java,
        f"-Xmx{heap}",
        "-Xms64m",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        *LAB_JIT,
        "-XX:+ExitOnOutOfMemoryError",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={directory.parent / 'log4j2.yaml'}",
        f"-Dkaudit.lab.node={directory}",
        "-cp",
        runtime.classpath,
        *main,
    ]


def _format(
    runtime: KafkaRuntime, nodes: list[LabNode], cluster_id: str,
    extra: Mapping[str, Sequence[str]],
) -> None:
    """Format every node's storage, in parallel (each is a JVM start); ``extra`` holds the
    storage tool's further arguments for each role."""
    procs = []
    for node in nodes:
        config = Path(node.directory) / "server.properties"
        argv = _argv(
            runtime,
            node.role,
            "256m",
            Path(node.directory),
            ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c",
             str(config), *extra.get(node.role, ())],
        )
        archive = kafka_archive(argv)  # read only: the brokers write it, with more classes
        if archive is not None:
            argv = [argv[0], *archive.options(write=False), *argv[1:]]
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
            tail = log_tail(Path(node.directory) / "format.log")
            raise LabError(f"formatting storage for node {node.id} failed (exit {code}): {tail}")


@dataclass(frozen=True)
class LabShape:
    """What a new lab is made of, beyond its size."""

    broker_config: BrokerConfig = field(default_factory=BrokerConfig)
    security: sec.Security = sec.Security.plaintext
    quorum: Quorum = Quorum.static
    tiered_jars: Path | None = None
    """LocalTieredStorage's jars when the brokers tier their topics; None: they do not."""


def create_lab(
    state_dir: Path,
    runtime: KafkaRuntime,
    brokers: int,
    controllers: int,
    shape: LabShape | None = None,
) -> LabState:
    """Write configs and format storage for a new lab (nothing is started)."""
    shape = shape or LabShape()
    if not 1 <= brokers < CONTROLLER_ID_BASE:
        raise InputError(f"--brokers must be between 1 and {CONTROLLER_ID_BASE - 1}")
    if controllers not in (1, 3, 5):
        raise InputError("--controllers must be 1, 3 or 5 (a KRaft quorum of odd size)")
    shape.broker_config.check_ids(range(1, brokers + 1))
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "log4j2.yaml").write_text(_LOG4J2, encoding="utf-8")
    ports = free_ports(brokers + controllers)
    members = voters(shape.quorum, [(CONTROLLER_ID_BASE + i, ports[brokers + i])
                                    for i in range(controllers)])
    cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    every, by_broker = shape.broker_config.to_state()
    state = LabState(
        state_dir=str(state_dir),
        cluster_id=cluster_id,
        kafka_version=runtime.kafka_version,
        broker_config=every,
        broker_config_by_id=by_broker,
        security=shape.security.value,
        quorum=shape.quorum.value,
        tiered_storage=shape.tiered_jars is not None,
    )
    secured: dict[str, dict[str, str]] = {}
    format_extra: list[str] = []
    if shape.security is not sec.Security.plaintext:
        material = sec.generate(state_dir, shape.security)
        secured = {
            "broker": sec.broker_properties(material, shape.security),
            "controller": sec.controller_properties(material),
        }
        format_extra = sec.format_arguments(material, shape.security)
    tiered: dict[str, dict[str, str]] = {}
    if shape.tiered_jars is not None:
        tiered = {"broker": tiered_storage.broker_properties(state_dir, shape.tiered_jars,
                                                            brokers, listener="PLAINTEXT"),
                  "controller": tiered_storage.CONTROLLER_PROPERTIES}
    layout = [(i + 1, "broker", ports[i]) for i in range(brokers)] + [
        (v.id, "controller", v.port) for v in members
    ]
    for node_id, role, port in layout:
        directory = state_dir / f"{role}-{node_id}"
        directory.mkdir(parents=True, exist_ok=True)
        props = _node_properties(
            node_id,
            role,
            port,
            directory,
            quorum_properties(shape.quorum, members),
            brokers,
            shape.broker_config.of(node_id) if role == "broker" else {},
            secured.get(role),
            tiered.get(role),
        )
        (directory / "server.properties").write_text(properties_text(props), encoding="utf-8")
        heap = BROKER_HEAP if role == "broker" else CONTROLLER_HEAP
        argv = _argv(
            runtime, role, heap, directory, ["kafka.Kafka", str(directory / "server.properties")]
        )
        state.nodes.append(
            LabNode(id=node_id, role=role, port=port, directory=str(directory), argv=argv)
        )
    try:
        _format(runtime, state.nodes, cluster_id,
                {role: [*format_extra, *format_arguments(shape.quorum, role, members)]
                 for role in ("broker", "controller")})
    except BaseException:
        # Leave no half-formatted lab behind: the next `lab up` must start clean.
        for node in state.nodes:
            shutil.rmtree(node.directory, ignore_errors=True)
        raise
    state.save()
    return state
