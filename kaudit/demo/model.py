"""What the demo sets up and what it hands back.

The scenario: the topics with sound and unsound durability settings, the
policy that audits them, the orders service's producer, how many orders go to
the topic and which of them the faulty sink gets wrong. The results: where the
reports went, and everything the demo ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kaudit.check.findings import CheckResult
    from kaudit.probe.matrix import MatrixRow
    from kaudit.reconcile.request import ReconcileResult

Say = Callable[[str], None]
"""Where step lines go (stderr in the CLI)."""

STEPS = 6
DEMO_DIR = "demo"
PROBE_PAGE = "probe-matrix.html"
"""The probe matrix as one web page (tables and every run's timeline), in the demo's folder."""
DEMO_PAGE = "index.html"
"""Every step on one web page, each with what it shows and why its failure is the point."""
TOPIC_PREFIX = "kaudit-demo-"
ORDERS_TOPIC = f"{TOPIC_PREFIX}orders"
ORDER_COUNT = 1000
SINK_MISSING = (17, 404, 777)
"""Order ids the faulty sink never wrote."""
SINK_DUPLICATED = (42, 500)
"""Order ids the faulty sink wrote twice."""
SINK_CHANGED = (123, 600)
"""Order ids whose amount the faulty sink changed."""
SINK_FAULT_COUNTS = MappingProxyType({
    "missing_in_sink": len(SINK_MISSING), "extra_in_sink": 0,
    "duplicated_in_sink": len(SINK_DUPLICATED), "mismatched": len(SINK_CHANGED)})
"""The faulty sink by reconcile's classes: the demo's page sets what reconcile found beside it."""
MATRIX_COUNT = 30_000
DEMO_FAULT = "lag-then-kill-leader"
"""Freeze the followers, kill the leader, resume them: acks=1 loses what the leader
acknowledged alone, on every run (see kaudit.probe.faults)."""
MATRIX_RATE = 10_000.0
"""Messages per second: a steady stream, so the kill always lands mid-replication."""
CONNECT_TIMEOUT_S = 15.0
SETTLE_WAIT_S = 120.0
LAB_WAIT_S = 240.0


@dataclass(frozen=True)
class DemoTopic:
    """A topic the demo creates, and what is (or is not) wrong with it."""

    name: str
    replication_factor: int
    min_insync_replicas: int | None
    """None: inherited from the broker (1 on a fresh cluster)."""
    unclean_leader_election: bool | None
    story: str
    partitions: int = 3


DEMO_TOPICS = (
    DemoTopic(ORDERS_TOPIC, 3, 2, False,
              "sound: RF 3, min.insync.replicas 2, no unclean election (but see its producer)"),
    DemoTopic(f"{TOPIC_PREFIX}payments", 3, None, None,
              "inherits min.insync.replicas=1: acks=all quietly becomes acks=1"),
    DemoTopic(f"{TOPIC_PREFIX}ledger", 3, 2, True,
              "unclean leader election on: a lagging replica may become leader"),
    DemoTopic(f"{TOPIC_PREFIX}audit", 3, 3, False,
              "min.insync.replicas = RF: one broker down blocks every acks=all write"),
    DemoTopic(f"{TOPIC_PREFIX}clicks", 1, 1, False,
              "replication factor 1: one broker crash loses data"),
)
"""Sound and unsound durability settings, side by side."""

POLICY_YAML = f"""\
# kaudit demo policy (docs/policy.md). Every demo topic is held to the built-in
# `durable` profile; the other topics on this cluster are not the demo's business.
name: demo
extends: durable
topics:
  - match: "{TOPIC_PREFIX}*"
    profile: durable
  - match: "*"
    skip: true
clients:
  # The orders service's producer: the topic is sound, the producer is not.
  - config: orders-producer.properties
    role: producer
    topics: [{ORDERS_TOPIC}]
"""

PRODUCER_PROPERTIES = """\
# The orders service's producer (Java client properties).
acks=1
enable.idempotence=false
retries=2147483647
"""


@dataclass(frozen=True)
class DemoReports:
    """Where the demo wrote what it found."""

    directory: Path
    policy: Path
    check_json: Path
    check_sarif: Path
    probe_json: Path
    probe_plot: Path | None
    """The acks=1 run's timeline; None without matplotlib."""
    reconcile_json: Path
    sink: Path
    discrepancies: tuple[str, ...]


@dataclass(frozen=True)
class DemoResult:
    """Everything the demo ran, for the closing summary."""

    state_dir: Path
    bootstrap: str
    started_lab: bool
    check: CheckResult
    matrix: list[MatrixRow]
    reconcile: ReconcileResult
    reports: DemoReports
    seconds: float
