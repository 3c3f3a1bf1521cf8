"""The lab's state directory: ``lab.json`` plus one folder per node.

``lab.json`` records everything needed to restart a node exactly as it was
started (its command line and ports), so ``kaudit lab start ID`` and a second
``kaudit lab up`` bring back the same cluster with its data.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import LabStateError
from kaudit.lab.brokerconfig import BrokerConfig

STATE_FILE = "lab.json"


def default_state_dir() -> Path:
    """Per-user lab state directory (``KAUDIT_LAB_DIR`` overrides)."""
    env = os.environ.get("KAUDIT_LAB_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kaudit" / "lab"


class NodeState(StrEnum):
    """What a lab node's process is doing."""

    running = "running"
    paused = "paused"
    """Stopped with SIGSTOP: alive as a process, silent as a broker."""
    down = "down"


@dataclass
class LabNode:
    """One Kafka process of the lab."""

    id: int
    role: str
    """``broker``, ``controller`` or ``connect`` (the Kafka Connect worker)."""
    port: int
    directory: str
    argv: list[str]
    pid: int | None = None
    archive_partial: str | None = None
    """Where the running JVM writes the lab's class archive as it exits, if it does."""

    @property
    def log_path(self) -> Path:
        """Where the node's stdout and stderr go."""
        return Path(self.directory) / "server.log"

    @property
    def marker(self) -> str:
        """A token on the node's command line, to tell our JVM from a reused pid."""
        return f"-Dkaudit.lab.node={self.directory}"


@dataclass
class LabState:
    """Everything ``kaudit lab`` knows about one lab."""

    state_dir: str
    cluster_id: str
    kafka_version: str
    nodes: list[LabNode] = field(default_factory=list)
    broker_config: dict[str, str] = field(default_factory=dict)
    """``--broker-config`` settings of every broker."""
    security: str = "plaintext"
    """``plaintext``, ``sasl_ssl`` or ``mtls`` (see :mod:`kaudit.lab.security`)."""
    broker_config_by_id: dict[str, dict[str, str]] = field(default_factory=dict)
    """``--broker-config ID:KEY=VALUE`` settings, by broker id (over every broker's)."""
    quorum: str = "static"
    """``static`` or ``dynamic`` (see :mod:`kaudit.lab.quorum`); a lab made before the
    choice existed has a static quorum."""
    tiered_storage: bool = False
    """Whether the brokers run tiered storage (see :mod:`kaudit.lab.tiered`)."""

    @property
    def broker_settings(self) -> BrokerConfig:
        """What ``--broker-config`` gave the brokers, every broker's and each one's own."""
        return BrokerConfig.from_state(self.broker_config, self.broker_config_by_id)

    @property
    def brokers(self) -> list[LabNode]:
        """Broker nodes, by id."""
        return sorted((n for n in self.nodes if n.role == "broker"), key=lambda n: n.id)

    @property
    def controllers(self) -> list[LabNode]:
        """Controller nodes, by id."""
        return sorted((n for n in self.nodes if n.role == "controller"), key=lambda n: n.id)

    @property
    def connect_workers(self) -> list[LabNode]:
        """The Kafka Connect worker, if the lab runs one (``lab up --connect``)."""
        return [n for n in self.nodes if n.role == "connect"]

    @property
    def bootstrap(self) -> str:
        """The bootstrap servers string for clients."""
        return ",".join(f"127.0.0.1:{b.port}" for b in self.brokers)

    def client_properties_for(self, user: str) -> Path | None:
        """The Java client.properties of ``user`` on a secured lab; None on a plaintext one."""
        from kaudit.lab import security

        if self.security == security.Security.plaintext:
            return None
        return security.material(self.state_dir).client_properties(user)

    def connection(self, user: str | None = None, timeout: float = 10.0) -> ConnectionSettings:
        """How a client connects to this lab: as ``user`` (default: the operator's ordinary
        user; ``security.ADMIN`` for the lab's own work) on a secured lab."""
        from kaudit.connection.properties import read_properties, translate_java_properties
        from kaudit.lab import security

        path = self.client_properties_for(user or security.USER)
        properties = translate_java_properties(read_properties(path)) if path else {}
        return ConnectionSettings(bootstrap_servers=self.bootstrap, properties=properties,
                                  timeout=timeout, origin=f"the lab in {self.state_dir}")

    @property
    def client_properties(self) -> Path | None:
        """The client.properties an operator uses (an ordinary user), if the lab is secured."""
        from kaudit.lab import security

        return self.client_properties_for(security.USER)

    def node(self, node_id: int) -> LabNode:
        """The node with ``node_id``, or an input error listing the ids there are."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        ids = ", ".join(str(n.id) for n in sorted(self.nodes, key=lambda n: n.id))
        raise LabStateError(f"no node {node_id} in this lab (its nodes: {ids})")

    def save(self) -> None:
        """Write ``lab.json`` atomically."""
        path = Path(self.state_dir) / STATE_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def load(cls, state_dir: Path) -> LabState:
        """Read ``lab.json``; a missing lab is an input error that says what to run."""
        path = state_dir / STATE_FILE
        if not path.exists():
            raise LabStateError(f"no lab in {state_dir}", hint="start one with `kaudit lab up`")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            nodes = [LabNode(**n) for n in raw.pop("nodes")]
            return cls(nodes=nodes, **raw)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise LabStateError(
                f"{path}: unreadable lab state ({exc.__class__.__name__}); "
                "remove the directory or use `kaudit lab down --purge`"
            ) from None


def command_line(pid: int) -> list[str] | None:
    """A process's arguments from /proc; None when it is gone or not ours to read."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None


def node_state(node: LabNode) -> NodeState:
    """Is the node's process running, paused (SIGSTOP) or gone?"""
    pid = node.pid
    if not pid:
        return NodeState.down
    # Reap it if we are its parent, so a dead child is not a zombie.
    ours = True
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        ours = False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return NodeState.down
    args = command_line(pid)
    # Right after its launch a process's command line reads empty for a few milliseconds
    # (its exec is under way): that is our node starting, not a node gone.
    if args != [""] and node.marker not in (args or ()):
        return NodeState.down  # gone, or the pid was reused by another process
    code = stat.rsplit(")", 1)[1].split()[0]
    if code in ("Z", "X", "x"):
        # A child of ours shows Z as soon as its main thread is gone, but it can be reaped
        # only once every thread is (a SIGKILLed JVM on a busy machine takes a while): until
        # then it is not gone, and if we exited it would stay a zombie under an init that
        # reaps late (a CI run saw lab up's four killed nodes still in /proc so).
        return NodeState.running if ours else NodeState.down
    if code in ("T", "t"):
        return NodeState.paused
    return NodeState.running


@contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Hold the lab's lock so two kaudit commands do not start or stop it at once."""
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fh = open(state_dir / ".lock", "w")  # noqa: SIM115 - closed by the with below
    except OSError as exc:  # a file there, a read-only or pseudo file system
        raise LabStateError(f"--state-dir {state_dir}: cannot use it as the lab's "
                            f"directory: {exc.strerror or exc}") from None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabStateError(
                f"another kaudit command is changing the lab in {state_dir}",
                hint="wait for it to finish",
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
