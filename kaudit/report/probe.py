"""Render a probe run: the ``kaudit.probe/v1`` JSON document and a terminal summary."""

from __future__ import annotations

from typing import Any

from tabulate import tabulate

from kaudit.probe.model import ProbeReport
from kaudit.probe.outcomes import SUMMARY_CLASSES
from kaudit.report.base import Report, text_only

SCHEMA = "kaudit.probe/v1"
_CLASSES = SUMMARY_CLASSES


def probe_document(report: ProbeReport) -> dict[str, Any]:
    """The one record form of a run, feeding both renderings."""
    v = report.verification
    sending = report.produce_seconds - report.held_seconds
    return {
        "schema": SCHEMA,
        "run_id": report.run_id,
        "topic": report.topic,
        "settings": report.settings.describe(),
        "sent": v.sent,
        "acked": v.acked,
        "failed": v.failed,
        "indeterminate": v.indeterminate,
        "aborted": v.aborted,
        "lost": v.lost,
        "duplicated": v.duplicated,
        "duplicate_copies": v.duplicate_copies,
        "reordered": v.reordered,
        "aborted_visible": v.aborted_visible,
        "inconsistent_offsets": v.inconsistent_offsets,
        "consumer_missed": v.consumer_missed,
        "failed_present": v.failed_present,
        "indeterminate_present": v.indeterminate_present,
        "indeterminate_absent": v.indeterminate_absent,
        "unexpected": v.unexpected,
        "read_then_lost": report.read_then_lost,
        "lost_causes": None if report.loss_causes is None else report.loss_causes.to_dict(),
        "read_then_lost_causes": None if report.read_then_lost_causes is None
        else report.read_then_lost_causes.to_dict(),
        "send_errors": dict(sorted(report.send_errors.items())),
        "latency_ms": report.ack_latency.summary(),
        "e2e_latency_ms": report.e2e_latency.summary() if report.e2e_latency else None,
        "throughput": {
            "produce_seconds": round(report.produce_seconds, 3),
            "sending_seconds": round(sending, 3),
            "held_seconds": round(report.held_seconds, 3),
            "total_seconds": round(report.total_seconds, 3),
            "sent_per_second": round(v.sent / max(sending, 1e-9), 1),
            "verified_per_second": round(v.sent / max(report.total_seconds, 1e-9), 1),
        },
        "availability": report.timeline.summary(),
        "timeline": [{"second": x.second, "sent": x.sent, "acked": x.acked,
                      "failed": x.failed, "indeterminate": x.indeterminate,
                      "lost": x.lost, "duplicated": x.duplicated,
                      "ack_latency_max_ms": x.ack_latency_max_ms, "state": x.state}
                     for x in report.timeline.seconds()],
        "partitions": [p.to_dict() for p in v.partitions],
        "events": [{"at_s": e.at_s, "kind": e.kind, "detail": e.detail,
                    "partition": e.partition} for e in report.events],
        "samples": {cls: [s.to_dict() for s in samples]
                    for cls, samples in v.samples.items() if samples},
        "live_verification": report.live_verification,
        "drain_complete": report.drain_complete,
        "interrupted": report.interrupted,
        "topic_deleted": report.topic_deleted,
        "notes": report.notes,
        "verdict": report.verdict,
        "violations": report.violations(),
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def probe_table(report: ProbeReport) -> str:
    """A terminal summary: outcome counts, classes, latency, events, partitions, verdict."""
    r = probe_document(report)
    s = r["settings"]
    head = (f"kaudit probe {r['run_id'][:12]} on {r['topic']}: acks={s['acks']} "
            f"idempotence={str(s['idempotence']).lower()} "
            f"transactional={str(s['transactional']).lower()} RF={s['replication_factor']} "
            f"min.insync.replicas={s['min_insync_replicas'] or 'broker default'}"
            + (f" faults={','.join(s['faults'])}" if s["faults"] else ""))
    outcomes = tabulate([(r["sent"], r["acked"], r["failed"], r["indeterminate"], r["aborted"])],
                        headers=["sent", "acked", "failed", "indeterminate", "aborted"])
    classes = tabulate([(c, r[c]) for c in _CLASSES], headers=["class", "messages"])
    lat, e2e, tp = r["latency_ms"], r["e2e_latency_ms"] or {}, r["throughput"]
    latency = tabulate(
        [("ack", *(_ms(lat[k]) for k in ("p50", "p99", "p999", "max"))),
         ("end-to-end", *(_ms(e2e.get(k)) for k in ("p50", "p99", "p999", "max")))],
        headers=["latency ms", "p50", "p99", "p99.9", "max"])
    avail = r["availability"]
    lines = [head, "", outcomes, "", classes, "", latency, "",
             f"throughput: {tp['sent_per_second']:g} msg/s sent (over "
             f"{tp['sending_seconds']:g}s of sending"
             + (f"; then held {tp['held_seconds']:g}s for the fault to heal"
                if tp["held_seconds"] >= 0.1 else "") + "), "
             f"{tp['verified_per_second']:g} msg/s verified end to end "
             f"({tp['total_seconds']:g}s in all; read back "
             f"{'while producing' if r['live_verification'] else 'after the run'})",
             f"unavailable: {avail['unavailable_seconds']}s in "
             f"{len(avail['unavailable_windows'])} window(s)"]
    if r["send_errors"]:
        lines.append("send errors: " + ", ".join(f"{k} x{n}" for k, n in r["send_errors"].items()))
    if r["events"]:
        lines += ["", tabulate([(e["at_s"], e["kind"], e["partition"] if e["partition"]
                                 is not None else "-", e["detail"]) for e in r["events"]],
                               headers=["at s", "event", "partition", "detail"])]
    for cls, samples in r["samples"].items():
        shown = "; ".join(f"p{x['partition']} seq {x['sequence']} acked@{x['acked_offset']} "
                          f"seen@{x['seen_offsets']}" for x in samples[:3])
        lines.append(f"{cls} e.g.: {shown}")
    lines += [f"note: {n}" for n in r["notes"]]
    lines += ["", f"verdict: {r['verdict']}"] + [f"  {v}" for v in r["violations"]]
    return "\n".join(lines) + "\n"


def probe_html(report: ProbeReport) -> str:
    """One page a reader takes in at a glance: the verdict in a sentence with its reason,
    each reason explained, the counts as tables, the timeline, then the event log."""
    from kaudit.report import html
    from kaudit.report.explain import probe_sentence

    doc = probe_document(report)
    sections = [("Counts", _counts_html(doc)),
                ("Timeline", html.timeline(doc, "messages and ack latency per second; "
                                                "faults and leader changes marked")),
                ("Events", _events_html(doc)),
                *_details_html(doc)]
    return html.page(f"kaudit probe {doc['run_id'][:12]} on {doc['topic']}", doc["verdict"],
                     "", sections, reason=probe_sentence(doc), context=_context(doc),
                     head=html.reasons(doc["violations"]))


def _context(doc: dict[str, Any]) -> str:
    """The run's settings in one line, under the verdict."""
    s, tp = doc["settings"], doc["throughput"]
    fault = (f"fault {', '.join(s['faults'])} at {s['fault_at']} for {s['fault_duration']:g}s"
             if s["faults"] else "no fault")
    return (f"acks={s['acks']}, idempotence {'on' if s['idempotence'] else 'off'}, "
            f"transactional {'on' if s['transactional'] else 'off'}, "
            f"{s['partitions']} partition(s), RF={s['replication_factor']}, "
            f"min.insync.replicas={s['min_insync_replicas'] or 'broker default'}, {fault}; "
            f"{'--expect ' + s['expect'] if s['expect'] else 'no --expect'}; "
            f"{tp['total_seconds']:g}s in all, read back "
            f"{'while producing' if doc['live_verification'] else 'after the run'}")


def _counts_html(doc: dict[str, Any]) -> str:
    """What the producer was told, what reading back found, latency and throughput side by
    side; then per partition, and the producer's errors."""
    from kaudit.report import html

    n = html.number
    told = html.table(["write", "messages"], [(k, n(doc[k])) for k in (
        "sent", "acked", "failed", "indeterminate", "aborted")],
        caption="What the producer was told")
    found = html.table(["class", "messages"], [(c, n(doc[c])) for c in _CLASSES],
                       caption="What reading back found",
                       flagged=[i for i, c in enumerate(_CLASSES) if doc[c]
                                and any(v.startswith(f"{c}:") for v in doc["violations"])])
    lat, e2e = doc["latency_ms"], doc["e2e_latency_ms"] or {}
    latency = html.table(["latency ms", "p50", "p99", "p99.9", "max"],
                         [(name, *(n(d.get(k)) for k in ("p50", "p99", "p999", "max")))
                          for name, d in (("ack", lat), ("end-to-end", e2e))],
                         caption="Latency")
    tp, avail = doc["throughput"], doc["availability"]
    pace = html.table([], [
        ("sent per second", n(tp["sent_per_second"])),
        ("over seconds of sending", n(tp["sending_seconds"])),
        ("then held for the fault to heal, s", n(tp["held_seconds"])),
        ("verified per second, end to end", n(tp["verified_per_second"])),
        ("unavailable seconds", n(avail["unavailable_seconds"])),
        ("unavailable windows", n(len(avail["unavailable_windows"])))],
        caption="Throughput and availability")
    # Latency and throughput stacked in one column: four tables abreast overflow 1280 px.
    parts = [html.side_by_side(told, found, f"<div>{latency}{pace}</div>"),
             _partitions_html(doc)]
    if doc["send_errors"]:
        parts.append(html.table(["error", "sends"], [(k, n(v)) for k, v in
                                                     doc["send_errors"].items()],
                                caption="The producer's errors"))
    return "".join(parts)


_PARTITION_COUNTS = ("sent", "acked", "failed", "indeterminate", "lost", "duplicated",
                     "reordered")


def _partitions_html(doc: dict[str, Any]) -> str:
    from kaudit.report import html

    rows = [(p["partition"], *(html.number(p[k]) for k in _PARTITION_COUNTS),
             p["first_offset"], p["last_offset"], p["last_seen_offset"])
            for p in doc["partitions"]]
    return html.table(["partition", *_PARTITION_COUNTS, "first acked offset",
                       "last acked offset", "last offset read"], rows,
                      caption="Per partition",
                      flagged=[i for i, p in enumerate(doc["partitions"]) if p["lost"]])


def _setting(value: Any) -> str:
    """A setting as the JSON document spells it, lists and mappings flattened."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _events_html(doc: dict[str, Any]) -> str:
    from kaudit.report import html

    if not doc["events"]:
        return "<p>No fault, heal, leader or ISR change was recorded.</p>"
    return html.table(["at s", "event", "partition", "detail"],
                      [(f"{e['at_s']:.3f}", e["kind"], e["partition"], e["detail"])
                       for e in doc["events"]])


def _details_html(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """Examples of each class, the run's notes and every setting, when there are any."""
    from kaudit.report import html

    out = []
    if doc["samples"]:
        out.append(("Examples", html.table(
            ["class", "partition", "sequence", "acked offset", "seen at offsets"],
            [(cls, x["partition"], x["sequence"], x["acked_offset"],
              ", ".join(map(str, x["seen_offsets"])) or "never")
             for cls, samples in doc["samples"].items() for x in samples[:3]])))
    if doc["notes"]:
        out.append(("Notes", "<ul>" + "".join(f"<li>{html.escape(note)}</li>"
                                              for note in doc["notes"]) + "</ul>"))
    settings = [(k, _setting(v)) for k, v in doc["settings"].items()
                if v not in (None, [], {}, "")]
    out.append(("Settings", html.table(["setting", "value"], settings)))
    return out


PROBE: Report[ProbeReport] = Report(name="probe", document=probe_document,
                                    renderers={"table": text_only(probe_table),
                                               "html": text_only(probe_html)})
"""The ``kaudit probe`` report (``--plot`` draws the same document: :mod:`kaudit.report.plot`)."""
