"""Render a reconcile run: ``kaudit.reconcile/v1`` JSON and a terminal summary."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from kaudit.pipeline.causes import Explanation
from kaudit.reconcile.avro_schemas import AvroSchemas
from kaudit.reconcile.classes import CLASSES
from kaudit.reconcile.request import ReconcileResult
from kaudit.report.base import Report, text_only

SCHEMA = "kaudit.reconcile/v1"


def reconcile_document(result: ReconcileResult) -> dict[str, Any]:
    """The one record form of a run."""
    r = result.request
    return {
        "schema": SCHEMA,
        "source": {
            "topic": r.topic,
            "offsets": {str(x.partition): [x.start, x.end] for x in result.ranges},
            "log_start": {str(x.partition): x.log_start for x in result.ranges},
            "isolation_level": "read_committed" if r.read_committed else "read_uncommitted",
            "value_format": r.value_format,
            "key": r.key,
            # Avro values only: each writer schema's id (null for plain Avro) and where it
            # was read; id_from_topic: one file whose id is the one a sample carried
            **({"value_schemas": value_schemas(r.avro)} if r.avro is not None else {}),
        },
        # snapshot_id: the Iceberg snapshot read (null for sinks without snapshots)
        "sink": {"uri": result.sink.describe(), "kind": result.sink.kind,
                 "snapshot_id": result.sink.snapshot_id},
        "mode": r.mode,
        "compare": list(r.compare),
        # per compared column: its type in the topic and in the sink, and what both were
        # compared as (integers exactly, decimals at their scale, ...); note: why a type the
        # topic's own schema names was not read (null where it was, or there was none)
        "fields": [{"column": f.column, "topic_type": f.topic_type, "sink_type": f.sink_type,
                    "compared_as": f.compared_as, "note": f.note} for f in result.fields],
        "counts": {"topic_records": result.topic_records, "sink_rows": result.sink_rows,
                   **{c: int(result.counts.get(c, 0)) for c in CLASSES},
                   # offsets of the range that retention removed before the run
                   "unverifiable_offsets": int(result.counts.get("unverifiable_offsets", 0))},
        "partitions": {str(p): counts for p, counts in sorted(result.by_partition.items())},
        # with --connector/--sink-group: per class, how many discrepancies each cause
        # explains (null without); each sample of those classes has its "cause"
        "causes": None if result.explanation is None else
        {c: dict(n) for c, n in result.explanation.causes.items()},
        # what was read of the pipeline, and what could not be, with why
        "pipeline": None if result.explanation is None
        else evidence_document(result.explanation),
        "samples": {c: rows for c, rows in result.samples.items() if rows},
        "output_files": result.output_files,
        "seconds": round(result.seconds, 3),
        "verdict": result.verdict,
        "repeat_with": {"--from": {str(x.partition): x.start for x in result.ranges},
                        "--to": {str(x.partition): x.end for x in result.ranges},
                        **({"--sink-option": f"snapshot-id={result.sink.snapshot_id}"}
                           if result.sink.snapshot_id is not None else {})},
    }


def evidence_document(explained: Explanation) -> dict[str, Any]:
    """What was read of the pipeline, as the report says it."""
    ev = explained.evidence
    return {
        **explained.source,
        "bound_seconds": explained.bound_s,
        "committed_offsets": None if ev.committed is None
        else {str(p): o for p, o in sorted(ev.committed.items())},
        "tasks": None if ev.tasks is None else [asdict(t) for t in ev.tasks],
        "errors_tolerance": "all" if ev.tolerates_errors else "none",
        "settings": dict(ev.settings),
        "dead_letter_topic": ev.dead_letter_topic,
        "dead_letters": None if ev.dead_letters is None else len(ev.dead_letters),
        "restarts": None if ev.restarts is None else [asdict(r) for r in ev.restarts],
        "history_complete": ev.history_complete,
        "unread": dict(ev.unread),
        "classified": explained.classified,
        "discrepancies": explained.discrepancies,
    }


def value_schemas(avro: AvroSchemas) -> dict[str, Any]:
    """Which Avro schemas the values were read with, as the report says it."""
    return {"writers": [{"schema_id": w.schema_id, "source": w.source}
                        for w in avro.writers.values()],
            "reader": avro.reader.source, "id_from_topic": avro.id_from_topic}


def _schema_lines(source: dict[str, Any]) -> list[str]:
    """The table's line on the Avro schemas the values were read with (none for others)."""
    schemas = source.get("value_schemas")
    if schemas is None:
        return []
    if schemas["id_from_topic"]:
        [one] = schemas["writers"]
        used = f"schema id {one['schema_id']}" if one["schema_id"] is not None else "no id"
        return [f"value schema: {one['source']}, used for {used} (the ids sampled from both "
                "ends of each partition)", ""]
    writers = ", ".join(w["source"] if w["schema_id"] is None
                        else f"{w['schema_id']} ({w['source']})" for w in schemas["writers"])
    return [f"value schemas: {writers}; read as {schemas['reader']}", ""]


def reconcile_table(result: ReconcileResult) -> str:
    """Counts, then a few samples of each class with topic/partition/offset."""
    rec = reconcile_document(result)
    counts = rec["counts"]
    snapshot = rec["sink"]["snapshot_id"]
    at = f" at snapshot {snapshot}" if snapshot is not None else ""
    lines = [f"kaudit reconcile: {rec['source']['topic']} -> {rec['sink']['uri']}{at} "
             f"({rec['mode']}, {rec['source']['isolation_level']})", "",
             tabulate([(k, v) for k, v in counts.items()], headers=["class", "count"]), ""]
    lines += _schema_lines(rec["source"])
    lines += [f"{f['column']}: topic {f['topic_type']}, sink {f['sink_type']}, compared as "
              f"{f['compared_as']}" + (f" ({f['note']})" if f.get("note") else "")
              for f in rec["fields"]]
    if rec["fields"]:
        lines.append("")
    lines += _pipeline_lines(rec)
    for cls, rows in rec["samples"].items():
        shown = [(row.get("key"), row.get("partition"), row.get("offset"),
                  row.get("column") or "", row.get("topic_value") or "",
                  row.get("sink_value") or "") for row in rows]
        lines += [f"{cls}:", tabulate(shown, headers=["key", "partition", "offset", "column",
                                                      "topic value", "sink value"])]
        lines += [f"  key {row.get('key')}, {row.get('column')}: the values look alike and "
                  f"differ at {row['difference']}" for row in rows if row.get("difference")]
        lines += [f"  key {row.get('key')} at {row.get('partition')}:{row.get('offset')}: "
                  f"{row['cause']['name']}: {row['cause']['evidence']}"
                  for row in rows if row.get("cause")]
        lines.append("")
    for path in rec["output_files"]:
        lines.append(f"full discrepancy set: {path}")
    lines.append(f"verdict: {rec['verdict']}")
    return "\n".join(lines) + "\n"


def _pipeline_lines(rec: dict[str, Any]) -> list[str]:
    """The causes per class, and what was read of the pipeline (none without one)."""
    pipe = rec["pipeline"]
    if pipe is None:
        return []
    who = (f"connector {pipe['connector']} at {pipe['connect_url']}" if pipe["connector"]
           else "the sink")
    lines = [f"causes, from {who} (group {pipe['sink_group']}; read within "
             f"{pipe['bound_seconds']:g}s):"]
    rows = [(cls, cause, n) for cls, found in rec["causes"].items()
            for cause, n in found.items()]
    lines += [tabulate(rows, headers=["class", "cause", "count"])] if rows else ["  none"]
    if pipe["classified"] < pipe["discrepancies"]:
        lines.append(f"  (the first {pipe['classified']:,} of {pipe['discrepancies']:,} "
                     "discrepancies)")
    if pipe["restarts"] is not None and not pipe["history_complete"]:
        lines.append(f"  {pipe['status_topic']}: compacted or capped; earlier restarts may "
                     "be gone")
    lines += [f"  {what} unread: {why}" for what, why in pipe["unread"].items()]
    return [*lines, ""]


def reconcile_html(result: ReconcileResult) -> str:
    """One page: the summary, then counts per partition with each one's offset range."""
    from kaudit.report import html

    doc = reconcile_document(result)
    classes = [c for c in CLASSES if doc["counts"].get(c)] or list(CLASSES[:1])
    rows = [(p, *doc["source"]["offsets"].get(p, ["-", "-"]),
             *(counts.get(c, 0) for c in classes)) for p, counts in doc["partitions"].items()]
    sections = [("Per partition", html.table(["partition", "from offset", "to offset",
                                               *classes], rows))]
    if doc["causes"] is not None:
        found = [(cls, cause, n) for cls, causes in doc["causes"].items()
                 for cause, n in causes.items()]
        shown = [(cls, s.get("key"), s.get("partition"), s.get("offset"), s["cause"]["name"],
                  s["cause"]["evidence"]) for cls, samples in doc["samples"].items()
                 for s in samples if s.get("cause")]
        sections += [("Causes", html.table(["class", "cause", "count"], found)),
                     ("Samples and their causes", html.table(
                         ["class", "key", "partition", "offset", "cause", "evidence"], shown))]
    return html.page(f"kaudit reconcile: {doc['source']['topic']} -> {doc['sink']['uri']}",
                     doc["verdict"], reconcile_table(result), sections)


RECONCILE: Report[ReconcileResult] = Report(name="reconcile", document=reconcile_document,
                                            renderers={"table": text_only(reconcile_table),
                                                       "html": text_only(reconcile_html)})
"""The ``kaudit reconcile`` report."""
