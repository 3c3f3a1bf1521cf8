"""Each discrepancy's cause, from the pipeline that fed the sink (``--connector``,
``--sink-group``): the pipeline is read in a thread of its own while Spark starts and
compares, then every discrepancy (up to :data:`CLASSIFY_CAP`) is given its cause
(:mod:`kaudit.pipeline.causes`), and each sample its cause and evidence."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kaudit.connection.settings import ConnectionSettings
from kaudit.pipeline.causes import (
    EXPLAINED,
    Cause,
    Discrepancy,
    Explanation,
    PipelineEvidence,
    cause_of,
)
from kaudit.pipeline.read import PipelineSource, read_pipeline, record_times
from kaudit.reconcile.source import OffsetRange

CLASSIFY_CAP = 100_000
"""Discrepancies given a cause at most; the report says of how many when there were more."""


def bound_for(conn: ConnectionSettings) -> float:
    """How long the whole pipeline read may take: three waits of ``--timeout``."""
    return 3 * conn.timeout


class PipelineRead:
    """The pipeline's evidence, being read in the background since the run began (a
    daemon thread: a run that fails meanwhile does not wait for it)."""

    def __init__(self, conn: ConnectionSettings, source: PipelineSource, topic: str,
                 ranges: list[OffsetRange]) -> None:
        self.source, self.bound = source, bound_for(conn)
        self._found: list[PipelineEvidence] = []
        ends = {r.partition: r.end for r in ranges}

        def read() -> None:
            try:
                found = read_pipeline(conn, source, topic, ends, self.bound)
            except Exception as exc:  # said as unread, never a failed run
                found = PipelineEvidence(unread={"pipeline": f"{type(exc).__name__}: {exc}"})
            self._found.append(found)

        self._thread = threading.Thread(target=read, name="kaudit-pipeline", daemon=True)
        self._thread.start()

    def evidence(self) -> PipelineEvidence:
        """The evidence; all of it unread when the read outlasted its bound (it had the
        whole comparison's time too)."""
        self._thread.join(timeout=self.bound)
        if not self._found:
            return PipelineEvidence(unread={"pipeline": f"not read within {self.bound:g}s"})
        return self._found[0]


#: An Iceberg sink's history of the keys whose rows are there (duplicated, extra) and of
#: those whose rows are not (missing): :func:`kaudit.reconcile.table_history.table_history`.
HistoryOf = Callable[[set[str], set[str]], Any]


def explain(conn: ConnectionSettings, topic: str, read: PipelineRead, discrepancies: Any,
            samples: dict[str, list[dict[str, Any]]],
            history_of: HistoryOf | None = None) -> Explanation:
    """Every discrepancy's cause counted per class, and each sample's cause added to it
    (``cause``: name, evidence and the evidence's fields)."""
    from pyspark.sql import functions as F

    evidence = read.evidence()
    wanted = discrepancies.where(F.col("class").isin(*EXPLAINED)).select(
        "class", "key", "partition", "offset")
    rows = [Discrepancy(r["class"], r["key"], r["partition"], r["offset"])
            for r in wanted.limit(CLASSIFY_CAP).toLocalIterator()]
    total = wanted.count() if len(rows) >= CLASSIFY_CAP else len(rows)
    if history_of is not None:
        evidence = _with_history(evidence, history_of, rows)
    sampled = [_discrepancy(cls, s) for cls, shown in samples.items() if cls in EXPLAINED
               for s in shown]
    times = _times(conn, topic, [*rows, *sampled], evidence)
    counts: dict[str, Counter[str]] = {}
    for d in rows:
        cause = _cause(d, times, evidence)
        counts.setdefault(d.cls, Counter())[cause.name] += 1
    for cls, shown in samples.items():
        for sample in shown if cls in EXPLAINED else ():
            sample["cause"] = _shown(_cause(_discrepancy(cls, sample), times, evidence))
    return Explanation(source=read.source.describe(), evidence=evidence,
                       causes={c: dict(n.most_common()) for c, n in counts.items()},
                       classified=len(rows), discrepancies=total, bound_s=read.bound)


def _with_history(evidence: PipelineEvidence, history_of: HistoryOf,
                  rows: list[Discrepancy]) -> PipelineEvidence:
    """The evidence with the table's history of the flagged keys, or with why it is unread."""
    present = {d.key or "" for d in rows if d.cls in ("duplicated_in_sink", "extra_in_sink")}
    absent = {d.key or "" for d in rows if d.cls == "missing_in_sink"}
    try:
        found = history_of(present, absent)
    except Exception as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return replace(evidence, unread={**evidence.unread, "table snapshots": why[:300]})
    return replace(evidence, added_by=found.added_by, removed_by=found.removed_by)


def _discrepancy(cls: str, sample: dict[str, Any]) -> Discrepancy:
    return Discrepancy(cls, sample.get("key"), sample.get("partition"), sample.get("offset"))


def _cause(d: Discrepancy, times: dict[tuple[int, int], int],
           evidence: PipelineEvidence) -> Cause:
    place = d.place()
    timed = Discrepancy(d.cls, d.key, d.partition, d.offset,
                        times.get(place) if place is not None else None)
    cause = cause_of(timed, evidence)
    assert cause is not None  # only EXPLAINED classes come here
    return cause


def _times(conn: ConnectionSettings, topic: str, rows: list[Discrepancy],
           evidence: PipelineEvidence) -> dict[tuple[int, int], int]:
    """The record times a duplicate's cause needs (a restart after the record was
    written), read within one more ``--timeout``, only where the status topic showed
    restarts; a duplicate whose record's time is not read is unknown."""
    if not evidence.restarts:
        return {}
    places = {p for d in rows if d.cls == "duplicated_in_sink" and (p := d.place())}
    return record_times(conn, topic, places, conn.timeout) if places else {}


def _shown(cause: Cause) -> dict[str, Any]:
    return {"name": cause.name, "evidence": cause.evidence, **dict(cause.detail)}
