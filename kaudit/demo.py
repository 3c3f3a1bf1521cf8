"""``kaudit demo``: the whole tour, on the local lab, in a few minutes.

The demo calls the same cores the commands call (the lab manager, the
snapshot reader and rule engine, the probe matrix, the reconcile job) and
renders their results with the same formatters, so what it shows is exactly
what ``kaudit lab``, ``check``, ``probe matrix`` and ``reconcile`` print. Each
step also prints the command line that does the same thing by hand.

Steps:

1. the lab: reuse the one running in the state directory, or start it;
2. topics with sound and unsound durability settings, a policy for them and an
   ``acks=1`` producer config (all written under ``STATE_DIR/demo/``);
3. ``check``: the findings and the guarantee of every demo topic;
4. ``probe matrix``: acks=1 against acks=all with min.insync.replicas=2, the
   partition leader killed mid-run, at a steady rate (so that the followers are
   always a few milliseconds behind when the leader dies);
5. orders produced to a topic, and a Parquet "sink" written from them with
   known faults (rows missing, duplicated and changed);
6. ``reconcile`` of the topic against that sink.

Findings, losses and discrepancies are the point of the demo, not failures:
the demo succeeds when every step ran. Reports go to ``STATE_DIR/demo/``.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.errors import LabStateError, RuntimeUnavailable

if TYPE_CHECKING:
    from kaudit.check.findings import CheckResult
    from kaudit.connect.settings import ConnectionSettings
    from kaudit.lab.state import LabState
    from kaudit.probe.matrix import MatrixRow
    from kaudit.reconcile.job import ReconcileResult

Say = Callable[[str], None]
"""Where step lines go (stderr in the CLI)."""

STEPS = 6
DEMO_DIR = "demo"
TOPIC_PREFIX = "kaudit-demo-"
ORDERS_TOPIC = f"{TOPIC_PREFIX}orders"
ORDER_COUNT = 1000
SINK_MISSING = (17, 404, 777)
"""Order ids the faulty sink never wrote."""
SINK_DUPLICATED = (42, 500)
"""Order ids the faulty sink wrote twice."""
SINK_CHANGED = (123, 600)
"""Order ids whose amount the faulty sink changed."""
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

_MANAGED_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable")

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


class Demo:
    """Runs the steps in order; ``out`` gets the reports, ``say`` the progress lines."""

    def __init__(self, state_dir: Path, *, out: Say, say: Say, interrupted: threading.Event,
                 color: bool = False) -> None:
        self.state_dir = state_dir
        self.out, self._say = out, say
        self.interrupted = interrupted
        self.color = color
        self.directory = state_dir / DEMO_DIR
        self._step = 0

    # -- plumbing -----------------------------------------------------------------------

    def step(self, what: str) -> None:
        """Announce the next step (and stop here if Ctrl-C was pressed)."""
        if self.interrupted.is_set():
            raise KeyboardInterrupt
        self._step += 1
        self._say(f"[{self._step}/{STEPS}] {what}")

    def say(self, message: str) -> None:
        """A progress line within a step."""
        self._say(f"      {message}")

    def show(self, title: str, command: list[str], text: str) -> None:
        """A section of the report: a title, the equivalent command, its output."""
        self.out(f"\n== {title}\n$ {shlex.join(command)}\n{text.rstrip()}\n")

    def lab_args(self) -> list[str]:
        """``--state-dir DIR`` for commands shown to the user."""
        return ["--state-dir", str(self.state_dir)]

    # -- the steps ----------------------------------------------------------------------

    def run(self) -> DemoResult:
        """Run every step; raises a KauditError when a step itself breaks."""
        started = time.monotonic()
        self.step("lab: a local 3-broker Apache Kafka cluster")
        state, started_lab = self.ensure_lab()
        conn = lab_connection(state)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.out(f"kaudit demo on the lab in {self.state_dir} (bootstrap {state.bootstrap}).\n"
                 "To run the commands below yourself, first: "
                 f"eval \"$(kaudit lab env {shlex.join(self.lab_args())})\"\n")

        self.step(f"topics: {len(DEMO_TOPICS)} topics with sound and unsound durability "
                  "settings")
        self.create_topics(conn)
        policy = self.write_policy()

        self.step("check: does the configuration give the guarantee we think it does?")
        check_result, check_json, check_sarif = self.check(conn, policy)

        self.step("probe matrix: acks=1 vs acks=all (min.insync.replicas=2), leader killed "
                  "mid-run (about a minute)")
        rows, probe_json, plot = self.probe_matrix(conn)

        self.step(f"reconcile: {ORDER_COUNT} orders to {ORDERS_TOPIC}, a Parquet sink with "
                  "injected faults")
        ranges = produce_orders(conn, ORDERS_TOPIC, ORDER_COUNT)
        sink = self.directory / "sink" / "orders.parquet"
        self.say(f"writing the sink: {len(SINK_MISSING)} orders missing, "
                 f"{len(SINK_DUPLICATED)} duplicated, {len(SINK_CHANGED)} changed "
                 "(Spark, about half a minute)")
        write_faulty_sink(self.directory / "sink", sink)

        self.step("reconcile: did every order arrive in the sink? (Spark, about a minute)")
        result, reconcile_json = self.reconcile(conn, sink, ranges)

        reports = DemoReports(
            directory=self.directory, policy=policy, check_json=check_json,
            check_sarif=check_sarif, probe_json=probe_json, probe_plot=plot,
            reconcile_json=reconcile_json, sink=sink,
            discrepancies=tuple(result.output_files))
        return DemoResult(state_dir=self.state_dir, bootstrap=state.bootstrap,
                          started_lab=started_lab, check=check_result, matrix=rows,
                          reconcile=result, reports=reports,
                          seconds=time.monotonic() - started)

    def ensure_lab(self) -> tuple[LabState, bool]:
        """The lab running in the state directory, started if needed; True if we started it."""
        from kaudit.lab import manager
        from kaudit.lab.runtime import DEFAULT_KAFKA_VERSION, kafka_runtime
        from kaudit.lab.state import LabState, NodeState, node_state

        state: LabState | None
        try:
            state = LabState.load(self.state_dir)
        except LabStateError:
            state = None
        started = False
        if state is not None and all(node_state(n) is NodeState.running for n in state.nodes):
            self.say(f"reusing the lab running in {self.state_dir}")
        else:
            self.say(f"starting the lab in {self.state_dir} (the first start fetches Kafka's "
                     "jars from Maven Central)")
            state = manager.lab_up(
                self.state_dir, lambda: kafka_runtime(DEFAULT_KAFKA_VERSION, None),
                brokers=3, controllers=1, broker_config={}, wait_s=LAB_WAIT_S, say=self.say)
            started = True
        if len(state.brokers) < 3:
            raise LabStateError(f"the lab in {self.state_dir} has {len(state.brokers)} "
                                "broker(s); the demo needs 3",
                                hint="pass another --state-dir to start a new lab")
        return state, started

    def create_topics(self, conn: ConnectionSettings) -> None:
        """Create the demo topics, or set an existing one's configs back to the demo's."""
        from kaudit.cluster.client import AdminSession
        from kaudit.cluster.topics import TopicSpec, create_probe_topic, topic_partitions

        session = AdminSession(conn)
        for topic in DEMO_TOPICS:
            if topic_partitions(session, topic.name) is None:
                create_probe_topic(session, TopicSpec(
                    topic.name, topic.partitions, topic.replication_factor,
                    topic.min_insync_replicas, topic.unclean_leader_election))
                verb = "created"
            else:
                reset_topic_configs(session, topic)
                verb = "exists"
            self.say(f"{verb:<7} {topic.name:<22} {topic.story}")

    def write_policy(self) -> Path:
        """The demo's policy and the producer config it names."""
        policy = self.directory / "policy.yaml"
        policy.write_text(POLICY_YAML, encoding="utf-8")
        (self.directory / "orders-producer.properties").write_text(PRODUCER_PROPERTIES,
                                                                    encoding="utf-8")
        return policy

    def check(self, conn: ConnectionSettings, policy: Path) -> tuple[CheckResult, Path, Path]:
        """``kaudit check --policy DEMO_DIR/policy.yaml`` on the lab."""
        from kaudit import __version__
        from kaudit.check.engine import evaluate
        from kaudit.check.findings import Severity, SubjectKind
        from kaudit.cluster.reader import read_snapshot
        from kaudit.policy.loader import load_policies
        from kaudit.report.base import RenderOptions, render
        from kaudit.report.check import CHECK
        from kaudit.report.output import emit

        result = evaluate(read_snapshot(conn), load_policies([str(policy)]), [], [])
        check_json = self.directory / "check.json"
        check_sarif = self.directory / "check.sarif"
        options = RenderOptions(tool_version=__version__)
        emit(render(CHECK, result, "json", options), str(check_json))
        emit(render(CHECK, result, "sarif", options), str(check_sarif))
        self.show("check: the findings, and the guarantee each topic really gives",
                  ["kaudit", "check", "--policy", str(policy)],
                  render(CHECK, result, "table",
                         RenderOptions(tool_version=__version__, color=self.color)))
        counts = result.counts()
        unsound = sorted({f.subject.name for f in result.findings
                          if f.subject.kind is SubjectKind.topic
                          and f.severity is Severity.error and f.waived_by is None})
        self.out(f"check found {counts['errors']} error(s), {counts['warnings']} warning(s); "
                 f"topics with errors: {', '.join(unsound) or 'none'}. As a CI step, "
                 "`kaudit check` would exit 1 here.\n")
        return result, check_json, check_sarif

    def probe_matrix(self, conn: ConnectionSettings
                     ) -> tuple[list[MatrixRow], Path, Path | None]:
        """``kaudit probe matrix``: acks=1 and acks=all, each while the leader dies before
        its followers copy its writes (``lag-then-kill-leader``: the loss is made to
        happen, not hoped for)."""
        from kaudit.probe.faults import parse_fault_at
        from kaudit.probe.matrix import build_grid, run_matrix
        from kaudit.probe.runner import ProbeSettings
        from kaudit.report.base import render
        from kaudit.report.matrix import MATRIX
        from kaudit.report.output import emit

        fault_at, fault_duration = "30%", 3.0
        cells = build_grid(["1", "all"], ["off"], [2], ["off"], [DEMO_FAULT])
        base = ProbeSettings(count=MATRIX_COUNT, rate=MATRIX_RATE, partitions=1,
                             replication_factor=3, fault_at=parse_fault_at(fault_at),
                             fault_duration=fault_duration, lab_state_dir=self.state_dir,
                             e2e_latency=False)
        rows: list[MatrixRow] = []
        for n, cell in enumerate(cells, 1):
            # Each configuration starts on a healthy cluster: the broker the previous
            # one killed is back and every replica is in sync again.
            if not wait_until_in_sync(conn, SETTLE_WAIT_S, self.interrupted):
                self.say(f"some replicas are still out of sync after {SETTLE_WAIT_S:g}s; "
                         "going on")
            self.say(f"[{n}/{len(cells)}] {cell.label()}")
            rows += run_matrix(conn, base, [cell], 1, self.interrupted, lambda _line: None)
            if self.interrupted.is_set():
                raise KeyboardInterrupt
        probe_json = self.directory / "probe-matrix.json"
        emit(render(MATRIX, rows, "json"), str(probe_json))
        self.show("probe matrix: what each setting loses when the leader dies before its "
                  "followers have copied its writes",
                  ["kaudit", "probe", "matrix", "--acks", "1,all", "--idempotence", "off",
                   "--min-insync-replicas", "2", "--fault", DEMO_FAULT,
                   "--count", str(MATRIX_COUNT), "--rate", f"{MATRIX_RATE:g}",
                   "--fault-at", fault_at, "--fault-duration", f"{fault_duration:g}",
                   "--lab-state-dir", str(self.state_dir)],
                  render(MATRIX, rows, "table"))
        self.out(matrix_story(rows))
        plot = self.plot_acks1(rows)
        return rows, probe_json, plot

    def plot_acks1(self, rows: list[MatrixRow]) -> Path | None:
        """The acks=1 run's timeline as a PNG, when matplotlib is installed."""
        import importlib.util

        from kaudit.report.plot import plot_timeline
        from kaudit.report.probe import probe_document

        try:
            have_matplotlib = importlib.util.find_spec("matplotlib") is not None
        except (ImportError, ValueError):
            have_matplotlib = False
        acks1 = next((r for r in rows if r.cell.acks == "1" and r.reports), None)
        if not have_matplotlib or acks1 is None:
            self.say("no probe plot: pip install 'kaudit[plot]' to draw one")
            return None
        path = self.directory / "probe-acks1-kill-leader.png"
        plot_timeline(probe_document(acks1.reports[0]), path)
        return path

    def reconcile(self, conn: ConnectionSettings, sink: Path,
                  ranges: dict[int, tuple[int, int]]) -> tuple[ReconcileResult, Path]:
        """``kaudit reconcile`` of this run's orders against the faulty sink."""
        from kaudit.reconcile.job import ReconcileRequest, run_reconcile
        from kaudit.report.base import render
        from kaudit.report.output import emit
        from kaudit.report.reconcile import RECONCILE

        start = json.dumps({str(p): r[0] for p, r in sorted(ranges.items())})
        end = json.dumps({str(p): r[1] for p, r in sorted(ranges.items())})
        output_dir = self.directory / "discrepancies"
        request = ReconcileRequest(topic=ORDERS_TOPIC, sink_uri=f"parquet:{sink}", key="id",
                                   compare=("amount", "status"), start=start, end=end,
                                   output_dir=str(output_dir))
        result = run_reconcile(conn, request)
        path = self.directory / "reconcile.json"
        emit(render(RECONCILE, result, "json"), str(path))
        self.show("reconcile: this run's orders, topic against sink, record by record",
                  ["kaudit", "reconcile", "--topic", ORDERS_TOPIC, "--sink", f"parquet:{sink}",
                   "--key", "id", "--compare", "amount,status", "--from", start, "--to", end,
                   "--output-dir", str(output_dir)],
                  render(RECONCILE, result, "table"))
        return result, path


def lab_connection(state: LabState) -> ConnectionSettings:
    """Settings for the lab itself (never the user's context or environment)."""
    # A secured lab: its ordinary user (alice), whose ACLs cover all the demo does.
    return state.connection(timeout=CONNECT_TIMEOUT_S)


def reset_topic_configs(session: Any, topic: DemoTopic) -> None:
    """Give an existing demo topic the demo's topic-level configs again (a rerun)."""
    from kaudit.cluster.client import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    wanted = {"min.insync.replicas": topic.min_insync_replicas,
              "unclean.leader.election.enable": topic.unclean_leader_election}
    entries = []
    for key in _MANAGED_CONFIGS:
        value = wanted[key]
        if value is None:
            entries.append(ConfigEntry(key, None,
                                       incremental_operation=AlterConfigOpType.DELETE))
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            entries.append(ConfigEntry(key, text, incremental_operation=AlterConfigOpType.SET))
    resource = ConfigResource(ResourceType.TOPIC, topic.name, incremental_configs=entries)
    future = session.admin.incremental_alter_configs(
        [resource], request_timeout=session.settings.timeout)[resource]
    session.wait(future)


def produce_orders(conn: ConnectionSettings, topic: str, count: int
                   ) -> dict[int, tuple[int, int]]:
    """Produce ``count`` JSON orders keyed by id; the [start, end) offsets they took."""
    from kaudit.cluster.client import new_producer
    from kaudit.errors import ConnectionFailure

    offsets: dict[int, list[int]] = {}
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
            return
        offsets.setdefault(msg.partition(), []).append(msg.offset())

    producer = new_producer(conn, None, acks="all", **{"enable.idempotence": True})
    for order in demo_orders(count):
        producer.produce(topic, key=str(order["id"]), value=json.dumps(order),
                         on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(conn.timeout * 3)
    if remaining or errors:
        raise ConnectionFailure(f"could not produce the demo orders to {topic}: "
                                f"{errors[0] if errors else f'{remaining} unacknowledged'}")
    # An idempotent producer's records sit contiguously in each partition.
    return {p: (min(o), max(o) + 1) for p, o in offsets.items()}


def demo_orders(count: int) -> list[dict[str, Any]]:
    """The orders the demo produces: id, status, amount and customer."""
    statuses = ("new", "paid", "shipped")
    return [{"id": i, "status": statuses[i % 3], "amount": round(5 + (i * 7.31) % 200, 2),
             "customer": f"c-{i % 37}"} for i in range(count)]


def faulty_sink_rows(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a faulty consumer would have written: some missing, doubled, changed."""
    rows: list[dict[str, Any]] = []
    for order in orders:
        if order["id"] in SINK_MISSING:
            continue
        row = dict(order)
        if order["id"] in SINK_CHANGED:
            row["amount"] = round(row["amount"] + 10.0, 2)
        rows.append(row)
        if order["id"] in SINK_DUPLICATED:
            rows.append(dict(row))
    return rows


_WRITE_PARQUET = """\
import sys
from kaudit.demo import write_parquet_from_json_lines
write_parquet_from_json_lines(sys.argv[1], sys.argv[2])
"""


def write_faulty_sink(work_dir: Path, target: Path) -> None:
    """Write the faulty sink as Parquet, with Spark, in a child process.

    A child process because pyspark keeps one JVM per Python process: the
    reconcile step then starts its own session with its own settings.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    lines = work_dir / "orders.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n"
                             for r in faulty_sink_rows(demo_orders(ORDER_COUNT))),
                     encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _WRITE_PARQUET, str(lines), str(target)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeUnavailable(f"could not write the demo's Parquet sink with Spark: {last}")


def write_parquet_from_json_lines(source: str, target: str) -> None:
    """Convert a JSON-lines file into a one-file Parquet table (the demo's sink)."""
    from kaudit.reconcile.spark import start_session

    spark = start_session("local[1]", [])
    try:
        frame = spark.read.schema(
            "id BIGINT, status STRING, amount DOUBLE, customer STRING").json(source)
        frame.coalesce(1).write.mode("overwrite").parquet(target)
    finally:
        spark.stop()


def matrix_story(rows: list[MatrixRow]) -> str:
    """What the matrix showed, in the operator's words, from this run's numbers."""
    lines = []
    for row in rows:
        line = (f"acks={row.cell.acks}: {row.total('lost'):,} of {row.total('acked'):,} "
                "acknowledged writes lost")
        if row.total("duplicated"):
            line += f", {row.total('duplicated'):,} duplicated"
        if row.total("reordered"):
            line += f", {row.total('reordered'):,} reordered"
        if row.total("indeterminate"):
            line += (f", {row.total('indeterminate'):,} sends never answered "
                     "(indeterminate: not counted as lost)")
        lines.append(line + ".")
    by_acks = {row.cell.acks: row for row in rows}
    acks1, acks_all = by_acks.get("1"), by_acks.get("all")
    if acks1 is not None and acks1.total("lost"):
        lines.append("acks=1 is acknowledged by the leader alone: its followers were frozen "
                     "(still in the ISR) while it wrote, and when it died one of them was "
                     "elected cleanly without those writes. They are gone, every time.")
    elif acks1 is not None:
        lines.append("acks=1 lost nothing: no write was acknowledged while the followers "
                     "were frozen (the run may have ended first).")
    if acks_all is not None and acks_all.total("acked") and not acks_all.total("lost"):
        lines.append("acks=all with min.insync.replicas=2 is acknowledged only once a "
                     "second replica has the write, so the leader's death lost none of them.")
    if acks_all is not None and (acks_all.total("duplicated") or acks_all.total("reordered")):
        lines.append("Its duplicates and reorderings come from retries in the failover "
                     "(a lost answer, several requests in flight); an idempotent producer "
                     "(--idempotence on) prevents both.")
    return "\n".join(lines) + "\n"


def wait_until_in_sync(conn: ConnectionSettings, wait_s: float,
                       interrupted: threading.Event) -> bool:
    """Wait until every partition's ISR holds all its replicas; False after ``wait_s``."""
    from kaudit.cluster.client import AdminSession

    session = AdminSession(conn)
    deadline = time.monotonic() + wait_s
    while not interrupted.is_set():
        metadata = session.list_topics()
        if all(len(p.isrs) == len(p.replicas)
               for t in metadata.topics.values() for p in t.partitions.values()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)
    return False


def summary(result: DemoResult) -> str:
    """The closing lines: where the reports are, how to go on, how to stop the lab."""
    r = result.reports
    lab = shlex.join(["--state-dir", str(result.state_dir)])
    lines = ["", f"== done in {result.seconds:.0f}s. Reports in {r.directory}:",
             f"  check        {r.check_json}  (SARIF: {r.check_sarif.name})",
             f"  probe        {r.probe_json}"]
    if r.probe_plot is not None:
        lines.append(f"  probe plot   {r.probe_plot}")
    lines.append(f"  reconcile    {r.reconcile_json}")
    lines += [f"  discrepancies {path}" for path in r.discrepancies]
    lines += [f"  policy       {r.policy}  (edit it and run check again)",
              "",
              f"The lab is still running: eval \"$(kaudit lab env {lab})\" and try the "
              "commands above.",
              f"Stop it with: kaudit lab down {lab}   (add --purge to delete its data)", ""]
    return "\n".join(lines)


def demo_document(result: DemoResult) -> dict[str, Any]:
    """The ``kaudit.demo/v1`` document: where everything went, and the check, probe
    matrix and reconcile documents the demo wrote (read back from its reports)."""
    r = result.reports

    def report(path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8"))

    return {
        "schema": "kaudit.demo/v1",
        "state_dir": str(result.state_dir),
        "bootstrap": result.bootstrap,
        "started_lab": result.started_lab,
        "seconds": round(result.seconds, 1),
        "reports": {
            "directory": str(r.directory), "policy": str(r.policy),
            "check": str(r.check_json), "check_sarif": str(r.check_sarif),
            "probe_matrix": str(r.probe_json),
            "probe_plot": str(r.probe_plot) if r.probe_plot is not None else None,
            "reconcile": str(r.reconcile_json), "sink": str(r.sink),
            "discrepancies": list(r.discrepancies),
        },
        "check": report(r.check_json),
        "probe_matrix": report(r.probe_json),
        "reconcile": report(r.reconcile_json),
    }


def run_demo(state_dir: Path, *, out: Say, say: Say, interrupted: threading.Event,
             color: bool = False) -> DemoResult:
    """Run the demo on the lab in ``state_dir`` (started if it is not running)."""
    demo = Demo(state_dir, out=out, say=say, interrupted=interrupted, color=color)
    result = demo.run()
    out(summary(result))
    return result
