"""The demo's steps, in order: each calls the core its command calls and shows the report
that command prints, with the command line that does the same by hand."""

from __future__ import annotations

import json
import shlex
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.demo.cluster import lab_connection, reset_topic_configs
from kaudit.demo.model import (
    DEMO_DIR,
    DEMO_FAULT,
    DEMO_PAGE,
    DEMO_TOPICS,
    LAB_WAIT_S,
    MATRIX_COUNT,
    MATRIX_RATE,
    ORDER_COUNT,
    ORDERS_TOPIC,
    POLICY_YAML,
    PROBE_PAGE,
    PRODUCER_PROPERTIES,
    SETTLE_WAIT_S,
    SINK_CHANGED,
    SINK_DUPLICATED,
    SINK_FAULT_COUNTS,
    SINK_MISSING,
    STEPS,
    DemoReports,
    DemoResult,
    Say,
)
from kaudit.demo.orders import produce_orders, write_faulty_sink
from kaudit.demo.report import matrix_story, summary
from kaudit.errors import LabStateError

if TYPE_CHECKING:
    from kaudit.check.findings import CheckResult
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.lab.state import LabState
    from kaudit.probe.matrix import MatrixRow
    from kaudit.reconcile.request import ReconcileResult


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
        from kaudit.reconcile.request import ReconcileRequest
        from kaudit.reconcile.spark import begin_session, connector_jars, stop_session

        # One Spark driver writes the sink and runs the reconcile (which uses the session it
        # finds running on its master): its JVM starts while the orders are produced.
        self.say(f"starting Spark (its JVM takes most of a minute on a first start) while "
                 f"{ORDER_COUNT} orders are written to {ORDERS_TOPIC}")
        ranges, spark = begin_session(ReconcileRequest.master, connector_jars()).wait_after(
            lambda: produce_orders(conn, ORDERS_TOPIC, ORDER_COUNT))
        try:
            sink = self.directory / "sink" / "orders.parquet"
            self.say(f"writing the sink: {len(SINK_MISSING)} orders missing, "
                     f"{len(SINK_DUPLICATED)} duplicated, {len(SINK_CHANGED)} changed (Spark)")
            write_faulty_sink(spark, self.directory / "sink", sink)

            self.step("reconcile: did every order arrive in the sink? (Spark, about half a "
                      "minute)")
            result, reconcile_json = self.reconcile(conn, sink, ranges)
        finally:
            stop_session(spark)

        reports = DemoReports(
            directory=self.directory, policy=policy, check_json=check_json,
            check_sarif=check_sarif, probe_json=probe_json, probe_plot=plot,
            reconcile_json=reconcile_json, sink=sink,
            discrepancies=tuple(result.output_files))
        self.write_page(reports)
        return DemoResult(state_dir=self.state_dir, bootstrap=state.bootstrap,
                          started_lab=started_lab, check=check_result, matrix=rows,
                          reconcile=result, reports=reports,
                          seconds=time.monotonic() - started)

    def write_page(self, reports: DemoReports) -> Path:
        """Every step on one page, ``DEMO_DIR/index.html``, made from the reports the steps
        wrote (the per-step files stay)."""
        from kaudit.report.demo_page import demo_page
        from kaudit.report.output import emit

        def document(path: Path) -> Any:
            return json.loads(path.read_text(encoding="utf-8"))

        def name(path: Path | str) -> str:
            # As the page's reader finds them: beside it (the page may be opened elsewhere).
            path = Path(path)
            return str(path.relative_to(self.directory)
                       if path.is_relative_to(self.directory) else path)

        files = [(name(reports.check_json), "check's findings and guarantees (JSON)"),
                 (name(reports.check_sarif), "the same findings as SARIF, for code scanning"),
                 (name(reports.probe_json), "the probe matrix's counts, run by run (JSON)"),
                 (PROBE_PAGE, "the probe matrix's own page, with each run's timeline")]
        if reports.probe_plot is not None:
            files.append((name(reports.probe_plot), "the acks=1 run's timeline"))
        files += [(name(reports.reconcile_json), "reconcile's counts and samples (JSON)"),
                  *((name(p), "every order reconcile found wrong (Parquet)")
                    for p in reports.discrepancies),
                  (name(reports.policy), "the policy check used: edit it and run check again")]
        page = self.directory / DEMO_PAGE
        emit(demo_page(document(reports.check_json), document(reports.probe_json),
                       document(reports.reconcile_json), SINK_FAULT_COUNTS, files), str(page))
        return page

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
        from kaudit.check.policy.loader import load_policies
        from kaudit.cluster.reader import read_snapshot
        from kaudit.report.base import RenderOptions, render
        from kaudit.report.check import CHECK
        from kaudit.report.output import emit, table_width

        result = evaluate(read_snapshot(conn), load_policies([str(policy)]), [], [])
        check_json = self.directory / "check.json"
        check_sarif = self.directory / "check.sarif"
        options = RenderOptions(tool_version=__version__)
        emit(render(CHECK, result, "json", options), str(check_json))
        emit(render(CHECK, result, "sarif", options), str(check_sarif))
        self.show("check: the findings, and the guarantee each topic really gives",
                  ["kaudit", "check", "--policy", str(policy)],
                  render(CHECK, result, "table",
                         RenderOptions(tool_version=__version__, color=self.color,
                                       width=table_width())))
        counts = result.counts()
        unsound = sorted({f.subject.name for f in result.findings
                          if f.subject.kind is SubjectKind.topic
                          and f.severity is Severity.error and f.waived_by is None})
        self.out(f"check found {counts['errors']} error(s), {counts['warnings']} warning(s); "
                 f"topics with errors: {', '.join(unsound) or 'none'}. As a CI step, "
                 "`kaudit check` would exit 1 here.\n")
        if any(f.rule == "KA313" for f in result.findings):
            self.out("The lab runs one KRaft controller so that it fits on a laptop: KA313 "
                     "says what one controller costs a real cluster (`kaudit lab up "
                     "--controllers 3` runs three).\n")
        return result, check_json, check_sarif

    def probe_matrix(self, conn: ConnectionSettings
                     ) -> tuple[list[MatrixRow], Path, Path | None]:
        """``kaudit probe matrix``: acks=1 and acks=all, each while the leader dies before
        its followers copy its writes (``lag-then-kill-leader``: the loss is made to
        happen, not hoped for)."""
        from kaudit.cluster.client import AdminSession
        from kaudit.cluster.topics import wait_until_in_sync
        from kaudit.probe.faults.registry import parse_fault_at
        from kaudit.probe.matrix import build_grid, run_matrix
        from kaudit.probe.model import ProbeSettings
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
            if not wait_until_in_sync(AdminSession(conn), SETTLE_WAIT_S, self.interrupted):
                self.say(f"some replicas are still out of sync after {SETTLE_WAIT_S:g}s; "
                         "going on")
            self.say(f"[{n}/{len(cells)}] {cell.label()}")
            rows += run_matrix(conn, base, [cell], 1, self.interrupted, lambda _line: None)
            if self.interrupted.is_set():
                raise KeyboardInterrupt
        probe_json = self.directory / "probe-matrix.json"
        emit(render(MATRIX, rows, "json"), str(probe_json))
        # The page: the verdict table and each run's timeline, the acks=1 loss drawn at the
        # seconds whose writes were lost.
        emit(render(MATRIX, rows, "html"), str(self.directory / PROBE_PAGE))
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
            self.say("no probe plot: matplotlib is not installed (pip install matplotlib)")
            return None
        # Named after the fault as the report shows it (lag-then-kill-leader:3); ':' would
        # read as a URL scheme in a link to the file.
        fault = "+".join(f.label() for f in acks1.reports[0].settings.faults) or "no-fault"
        path = self.directory / f"probe-acks1-{fault.replace(':', '-')}.png"
        plot_timeline(probe_document(acks1.reports[0]), path)
        return path

    def reconcile(self, conn: ConnectionSettings, sink: Path,
                  ranges: dict[int, tuple[int, int]]) -> tuple[ReconcileResult, Path]:
        """``kaudit reconcile`` of this run's orders against the faulty sink."""
        from kaudit.reconcile.job import run_reconcile
        from kaudit.reconcile.request import ReconcileRequest
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


def run_demo(state_dir: Path, *, out: Say, say: Say, interrupted: threading.Event,
             color: bool = False) -> DemoResult:
    """Run the demo on the lab in ``state_dir`` (started if it is not running)."""
    demo = Demo(state_dir, out=out, say=say, interrupted=interrupted, color=color)
    result = demo.run()
    out(listing_the_page(summary(result), result.reports.directory / DEMO_PAGE))
    return result


def listing_the_page(closing: str, page: Path) -> str:
    """The closing summary with the demo's page first in its list of reports (after the
    ``== done ... Reports in DIR:`` line; at the end if that line is not there)."""
    line = f"  demo page    {page}  (every step and what it shows: open it in a browser)"
    lines = closing.split("\n")
    at = next((n + 1 for n, text in enumerate(lines) if text.startswith("== done")), None)
    if at is None:
        return closing.rstrip("\n") + "\n" + line + "\n"
    return "\n".join([*lines[:at], line, *lines[at:]])
