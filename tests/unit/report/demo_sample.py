"""The demo's three documents as its steps store them, built small: the shared check sample,
a two-configuration probe matrix verified for real (acks=1 loses writes, acks=all none), and
a reconcile run that found the faults the demo's sink is built with.

Each is made by its report's own document function and passed through JSON, as the demo
reads them back from its files.
"""

from __future__ import annotations

import json
from typing import Any

from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.reconcile.request import ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec
from kaudit.reconcile.source import OffsetRange
from kaudit.report.check.record import check_document
from kaudit.report.matrix import matrix_document
from kaudit.report.output import to_json
from kaudit.report.reconcile import reconcile_document
from tests.unit.probe.reports import probe_report
from tests.unit.report.check_sample import SAMPLE

INJECTED = {"missing_in_sink": 3, "extra_in_sink": 0, "duplicated_in_sink": 2, "mismatched": 2}
"""What the demo's sink is built with (kaudit.demo.model: SINK_MISSING, ...)."""


def stored(document: dict[str, Any]) -> dict[str, Any]:
    """A document as the demo reads it back from its file."""
    loaded: dict[str, Any] = json.loads(to_json(document))
    return loaded


def check_doc() -> dict[str, Any]:
    return stored(dict(check_document(SAMPLE)))


def matrix_doc(acks1_lost: int = 37, acks_all_lost: int = 0) -> dict[str, Any]:
    fault = parse_fault("lag-then-kill-leader")
    return stored(matrix_document([
        MatrixRow(MatrixCell("1", False, 2, False, fault),
                  (probe_report(acked=200, lost=acks1_lost),)),
        MatrixRow(MatrixCell("all", False, 2, False, fault),
                  (probe_report(acked=190, lost=acks_all_lost, duplicated=2),)),
    ]))


def reconcile_doc(counts: dict[str, int] | None = None) -> dict[str, Any]:
    counts = dict(INJECTED) if counts is None else counts
    result = ReconcileResult(
        request=ReconcileRequest(topic="kaudit-demo-orders", sink_uri="parquet:/lab/orders"),
        sink=SinkSpec("parquet", "/lab/orders"), ranges=[OffsetRange(0, 0, 1000, 0, 0)],
        topic_records=1000, sink_rows=999, counts=counts, by_partition={0: counts},
        samples={"missing_in_sink": [{"key": "17", "partition": 0, "offset": 4},
                                     {"key": "404", "partition": 0, "offset": 122},
                                     {"key": "777", "partition": 0, "offset": 254}],
                 "mismatched": [{"key": "123", "partition": 0, "offset": 45,
                                 "column": "amount"}]},
        output_files=[], seconds=1.0)
    return stored(reconcile_document(result))
