"""``--format github``: GitHub Actions workflow commands, one annotation per open finding."""

from __future__ import annotations

from kaudit.check.findings import CheckResult
from kaudit.report.check.record import (
    FindingRecord,
    RenderOptions,
    check_document,
    finding_text,
    source_location,
    summary_line,
)

# Workflow command levels; GitHub calls the lowest one "notice".
_COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message, as the Actions runner unescapes it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (``file=``, ``title=``...)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: FindingRecord) -> str:
    """One ``::error file=...,line=...,title=...::message`` line."""
    properties: list[tuple[str, str]] = []
    where = source_location(f["source"])
    if where is not None:
        properties.append(("file", where.path))
        properties.append(("line", str(where.line)))
        if where.column is not None:
            properties.append(("col", str(where.column)))
    properties.append(("title", f"{f['rule']} {f['name']}"))
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{_COMMAND[f['severity']]} {props}::{escape_data(finding_text(f))}"


def render_github(result: CheckResult, options: RenderOptions) -> str:
    """Annotations for unwaived findings, then a plain summary line for the job log."""
    lines = [annotation(f) for f in check_document(result)["findings"] if f["waived_by"] is None]
    lines.append(f"kaudit check: {summary_line(result)}")
    return "\n".join(lines) + "\n"
