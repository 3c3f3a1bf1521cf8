"""``--format json``: the ``kaudit.check/v1`` document as it is."""

from __future__ import annotations

from kaudit.check.findings import CheckResult
from kaudit.report.check.record import RenderOptions, check_document
from kaudit.report.output import to_json


def render_json(result: CheckResult, options: RenderOptions) -> str:
    """The contract document, indented, keys in contract order."""
    return to_json(dict(check_document(result)))
