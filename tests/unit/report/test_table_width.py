"""Every table kaudit prints fits a 100-column terminal (COLUMNS=100), drawn from realistic
sample data: a table wider than the terminal wraps line by line and loses its columns.

A table tabulate draws has a rule line (``------  ----`` or ``+-----+---+``) exactly as wide
as the table, so measuring the rules measures the tables and not the prose lines around
them (a heading, a throughput line). The matrix and the proof are tables through and
through: all of their lines are measured.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from kaudit.check.findings import CheckResult
from kaudit.cluster.info import ClusterInfo
from kaudit.cluster.model import Broker
from kaudit.lab.state import LabNode, LabState
from kaudit.probe.consume.model import ConsumeEvent, ConsumeReport
from kaudit.probe.consume.verify import CrashBlame
from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.prove import judge
from kaudit.reconcile.request import ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec
from kaudit.reconcile.source import OffsetRange
from kaudit.report.base import RenderOptions, render
from kaudit.report.check import CHECK
from kaudit.report.check.table import BREAK_MARK
from kaudit.report.cluster import CLUSTER
from kaudit.report.consume import CONSUME
from kaudit.report.lab import LAB_STATUS, LabStatus
from kaudit.report.matrix import MATRIX
from kaudit.report.output import table_width
from kaudit.report.probe import PROBE
from kaudit.report.prove import PROVE, Proof
from kaudit.report.reconcile import RECONCILE
from tests.unit.probe.reports import consume_report, probe_report
from tests.unit.report.check_sample import SAMPLE, TOOL_VERSION

WIDTH = 100
PROBE_SAMPLE = Path(__file__).resolve().parents[2] / "data" / "probe-sample.json"
_RULE = re.compile(r"-+(?: +-+)*|\+(?:[-=]+\+)+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Where `kaudit demo` and the lab keep their files: the paths the issue saw cut mid-word.
DEMO_PRODUCER = "/home/operator/.local/state/kaudit/lab/demo/orders-producer.properties"
DEMO_POLICY = "/home/operator/.local/state/kaudit/lab/demo/policy.yaml"


@pytest.fixture(autouse=True)
def _columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def _rules(text: str) -> list[str]:
    rules = [line for line in _ANSI.sub("", text).splitlines() if _RULE.fullmatch(line)]
    assert rules, f"no table found in:\n{text}"
    return rules


def _widest_table(text: str) -> int:
    return max(len(rule) for rule in _rules(text))


def _widest_line(text: str) -> int:
    return max(len(line) for line in _ANSI.sub("", text).splitlines())


# --- check -------------------------------------------------------------------------------

def _check_on_the_demo_lab() -> CheckResult:
    """The shared sample, with a producer config and a policy where the demo writes them."""
    findings = tuple(replace(f, source=f"{DEMO_PRODUCER}:3")
                     if f.source and f.source.startswith("clients/") else f
                     for f in SAMPLE.findings)
    guarantees = tuple(replace(g, producer=DEMO_PRODUCER) if g.producer else g
                       for g in SAMPLE.guarantees)
    return replace(SAMPLE, findings=findings, guarantees=guarantees,
                   policies=("durable", DEMO_POLICY), origin="live",
                   cluster_id="2kCXDTYdRqaPbIsCm3ajtQ")


def _cells(grid: str) -> list[str]:
    """Every cell of the grid tables in ``grid``, its lines joined back: with nothing after a
    line that ends in ``/`` (a path wrapped there) or in the break mark, else a space."""
    cells: list[str] = []
    block: list[list[str]] = []
    for line in [*grid.splitlines(), "+"]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip("|").split("|")])
            continue
        for column in zip(*block, strict=True):
            text = ""
            for part in (p for p in column if p):
                if text.endswith(BREAK_MARK):
                    text = text[:-len(BREAK_MARK)] + part
                else:
                    text += ("" if not text or text.endswith("/") else " ") + part
            cells.append(text)
        block = []
    return cells


@pytest.mark.parametrize("color", [False, True], ids=["plain", "color"])
@pytest.mark.parametrize("result", [SAMPLE, _check_on_the_demo_lab()], ids=["sample", "demo"])
def test_check_fits(result: CheckResult, color: bool) -> None:
    text = render(CHECK, result, "table", RenderOptions(tool_version=TOOL_VERSION, color=color,
                                                        width=table_width()))
    assert len(_rules(text)) >= 6  # findings and guarantees: top, header and bottom rules
    assert _widest_line(text) <= WIDTH, text


@pytest.mark.parametrize("width", [WIDTH, 80, None], ids=["100", "80", "wide"])
def test_check_wraps_a_path_after_a_slash_never_inside_a_name(width: int | None) -> None:
    text = render(CHECK, _check_on_the_demo_lab(), "table",
                  RenderOptions(tool_version=TOOL_VERSION, width=width))
    cells = _cells(text)
    assert DEMO_PRODUCER in cells  # the guarantee's producer
    assert any(f"{DEMO_PRODUCER}:3" in cell for cell in cells)  # the finding's source
    assert BREAK_MARK not in text  # every word fits its column: nothing had to be cut
    heading = " ".join(line.strip() for line in text.split("\n\n")[0].splitlines())
    assert DEMO_POLICY in heading.replace("/ ", "/")


def test_a_word_longer_than_its_column_is_cut_with_a_mark() -> None:
    name = "orders-" + "x" * 120  # a topic name can be 249 characters long
    result = replace(SAMPLE, guarantees=(replace(SAMPLE.guarantees[0], topic=name),))
    text = render(CHECK, result, "table", RenderOptions(width=WIDTH))
    assert _widest_line(text) <= WIDTH
    assert name in _cells(text)
    assert BREAK_MARK in text


# --- probe, matrix, prove, consume -------------------------------------------------------

def _lab_run() -> tuple[ProbeSettings, list[ProbeEvent]]:
    """Settings and events of the recorded lab run in tests/data/probe-sample.json."""
    doc = json.loads(PROBE_SAMPLE.read_text(encoding="utf-8"))
    s = doc["settings"]
    settings = ProbeSettings(acks=s["acks"], idempotence=s["idempotence"],
                             min_insync_replicas=s["min_insync_replicas"],
                             faults=tuple(parse_fault(f) for f in s["faults"]))
    return settings, [ProbeEvent(**e) for e in doc["events"]]


def _big(**counts: int) -> ProbeReport:
    """A run of a million messages (counts set, not sent: a real ledger that size is slow)."""
    run = probe_report(acked=200, lost=20, duplicated=5, unavailable_s=13)
    return replace(run, verification=replace(
        run.verification, **{"sent": 1_000_000, "acked": 1_000_000, "lost": 20_903,
                             "duplicated": 52, "reordered": 1_317, **counts}))


def test_probe_fits() -> None:
    settings, events = _lab_run()
    report = replace(_big(), settings=settings, events=events,
                     send_errors={"_MSG_TIMED_OUT": 1_204, "NOT_LEADER_OR_FOLLOWER": 37})
    text = render(PROBE, report, "table")
    assert len(_rules(text)) == 4  # outcomes, classes, latency, events
    assert _widest_table(text) <= WIDTH, text


# Every --fault the matrix runs on the lab; the longest label is 29 characters.
MATRIX_FAULTS = ("lag-then-kill-leader", "shrink-isr-then-kill-leader:8", "pause-follower",
                 "bounce-leader:3", None)


def _matrix(trials: int = 3) -> list[MatrixRow]:
    return [MatrixRow(MatrixCell(acks, idempotence, 2, unclean, parse_fault(f) if f else None),
                      (_big(),) * trials)
            for acks, idempotence, unclean in (("1", False, False), ("all", True, True))
            for f in MATRIX_FAULTS]


def test_matrix_fits() -> None:
    rows = _matrix()
    text = render(MATRIX, rows, "table")
    assert _widest_line(text) <= WIDTH, text
    for row in rows:  # every setting of every configuration is still there
        assert row.cell.label() in text.splitlines()


def test_matrix_page_has_no_terminal_table_to_fit() -> None:
    """The page's rows are an HTML table, which the browser fits to its window
    (test_pages_browser: no sideways scrolling); each configuration is one cell."""
    rows = _matrix(trials=1)[:1]
    page = render(MATRIX, rows, "html")
    assert "<pre>" not in page
    assert f"<td>{html.escape(rows[0].cell.label())}</td>" in page


def _proof() -> Proof:
    """Every claim with a run, at the counts the lab gives (README: 6000 messages a run)."""
    big = {"acked": 6_000}
    reports = {
        "acks0": probe_report(**big, lost=4_188),
        "acks1": probe_report(**big, lost=4_196, read_then_lost=0),
        "acksall": probe_report(**big),
        "isr1-unclean": probe_report(**big, lost=6_000),
        "isr1-clean": probe_report(**big, unavailable_s=9),
        "retries": probe_report(**big, duplicated=45),
        "idempotent": probe_report(**big),
        "idempotent-restart": probe_report(**big, duplicated=20),
        "txn-restart": probe_report(**big),
        "txn-aborts": probe_report(**big),
        "consume-before-process": consume_report("before-process", lost=75, crashes=3),
        "consume-after-process": consume_report("after-process", duplicated=75, crashes=3),
        "consume-transactional": consume_report("transactional", crashes=3),
        "consume-sink-offsets": consume_report("sink-offsets", crashes=3),
    }
    return Proof(judge(reports), reports, 184.0)


def test_prove_fits() -> None:
    proof = _proof()
    text = render(PROVE, proof, "table")
    assert _widest_line(text) <= WIDTH, text
    assert text.count("CONFIRMED") == len(proof.rows)


def _consume_run() -> ConsumeReport:
    """Crashes as the lab has them (README), and one of a long run over six partitions."""
    report = consume_report("before-process", lost=85, crashes=4)
    crashes = [
        CrashBlame(1, 0, 5_200_000_000, "after-commit-before-process", {2: "408-426"},
                   lost={2: list(range(408, 427))}),
        CrashBlame(0, 1, 15_300_000_000, "after-commit-before-process",
                   {0: "1243-1262", 1: "1243-1261"},
                   lost={0: list(range(1243, 1263)), 1: list(range(1243, 1262))}),
        CrashBlame(1, 10, 1_520_400_000_000, "after-send-offsets-before-commit",
                   {p: f"{166_001 + p}-{166_040 + p}" for p in range(6)},
                   duplicated={p: [*range(166_001, 166_005), *range(166_010, 166_020, 2)]
                               for p in range(6)}),
    ]
    return replace(report, verification=replace(report.verification, crashes=crashes),
                   events=[ConsumeEvent(3.2, "fault", "kill-coordinator: broker 2 SIGKILLed")])


def test_consume_fits() -> None:
    text = render(CONSUME, _consume_run(), "table")
    assert len(_rules(text)) == 2  # the counts, the crashes
    assert _widest_table(text) <= WIDTH, text
    assert "1.10 " in text  # worker 1's tenth start, not 1.1


def test_share_fits() -> None:
    from kaudit.report.share import SHARE
    from tests.unit.probe.reports import share_report

    for experiment in ("share-kill", "share-latest"):
        text = render(SHARE, share_report(experiment), "table")
        assert len(_rules(text)) == 3  # the fates, the causes, the records
        assert _widest_table(text) <= WIDTH, text


# --- reconcile, lab status, cluster ------------------------------------------------------

def test_reconcile_fits() -> None:
    result = ReconcileResult(
        request=ReconcileRequest(topic="kaudit-demo-orders",
                                 sink_uri="parquet:/srv/lake/orders.parquet",
                                 key="id", compare=("amount", "status")),
        sink=SinkSpec("parquet", "/srv/lake/orders.parquet"),
        ranges=[OffsetRange(p, 0, 338, 0, 0) for p in range(3)],
        topic_records=1_000, sink_rows=999,
        counts={"missing_in_sink": 3, "duplicated_in_sink": 2, "mismatched": 2},
        by_partition={0: {"missing_in_sink": 1}, 2: {"missing_in_sink": 2}},
        samples={"missing_in_sink": [{"key": 777, "partition": 0, "offset": 254}],
                 "mismatched": [
                     {"key": 123, "partition": 1, "offset": 45, "column": "amount",
                      "topic_value": "104.13", "sink_value": "114.13"},
                     {"key": 600, "partition": 2, "offset": 191, "column": "status",
                      "topic_value": "SHIPPED_TO_CUSTOMER", "sink_value": "AWAITING_PAYMENT"}]},
        output_files=["/srv/audit/discrepancies/discrepancies-202611250424040000.parquet"],
        seconds=31.0)
    text = render(RECONCILE, result, "table")
    assert len(_rules(text)) == 3  # the counts, two classes of samples
    assert _widest_table(text) <= WIDTH, text


def test_lab_status_fits() -> None:
    nodes = [LabNode(id=i, role="broker" if i < 100 else "controller", port=40_000 + i,
                     directory=f"/home/operator/.local/state/kaudit/lab/node-{i}", argv=[])
             for i in (1, 2, 3, 100, 101, 102)]
    state = LabState(state_dir="/home/operator/.local/state/kaudit/lab",
                     cluster_id="2kCXDTYdRqaPbIsCm3ajtQ", kafka_version="4.3.1", nodes=nodes)
    text = render(LAB_STATUS, LabStatus(state), "table")
    assert _widest_table(text) <= WIDTH, text


def test_cluster_fits() -> None:
    info = ClusterInfo(
        cluster_id="2kCXDTYdRqaPbIsCm3ajtQ", controller_id=1,
        brokers=tuple(Broker(i, f"kafka-{i}.kafka-headless.streaming.svc.cluster.local",
                             9092, f"europe-west1-{'abc'[i]}") for i in range(3)),
        topic_count=412, internal_topic_count=3,
        features={"metadata.version": "27", "transaction.version": "2"})
    text = render(CLUSTER, info, "table")
    assert _widest_table(text) <= WIDTH, text
