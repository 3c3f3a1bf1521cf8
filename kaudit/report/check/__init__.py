"""The report of ``kaudit check``: six formats keyed by ``--format``.

Every formatter takes the same :class:`~kaudit.check.findings.CheckResult` (already
redacted) and returns text; machine formats build on the record form in
:mod:`kaudit.report.check.record`. Render with :func:`kaudit.report.base.render` and
:data:`CHECK`; write the text with :func:`kaudit.report.output.emit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from kaudit.check.findings import CheckResult
from kaudit.report.base import RenderOptions, Report
from kaudit.report.check.github import render_github
from kaudit.report.check.html_format import render_html
from kaudit.report.check.json_format import render_json
from kaudit.report.check.junit import render_junit
from kaudit.report.check.record import check_document, redacted_result
from kaudit.report.check.sarif import render_sarif
from kaudit.report.check.table import render_table
from kaudit.report.output import CheckFormat

CheckFormatter = Callable[[CheckResult, RenderOptions], str]
"""A formatter: the (redacted) result and the options in, the finished text out."""

CHECK_FORMATTERS: Mapping[CheckFormat, CheckFormatter] = MappingProxyType(
    {
        CheckFormat.table: render_table,
        CheckFormat.json: render_json,
        CheckFormat.junit: render_junit,
        CheckFormat.sarif: render_sarif,
        CheckFormat.github: render_github,
        CheckFormat.html: render_html,
    }
)
"""The registry: one formatter per :class:`CheckFormat` (a test keeps them in step)."""


def _redacted(formatter: CheckFormatter) -> CheckFormatter:
    # Secrets are masked before any escaping or wrapping (which could hide them from a
    # later pass over the text); ``emit`` masks once more on the way out.
    return lambda result, options: formatter(redacted_result(result), options)


CHECK: Report[CheckResult] = Report(
    name="check", document=lambda result: dict(check_document(result)),
    renderers=MappingProxyType({str(fmt): _redacted(formatter)
                                for fmt, formatter in CHECK_FORMATTERS.items()}))
"""The check report: ``color`` affects ``table`` only."""


__all__ = ["CHECK", "CHECK_FORMATTERS", "CheckFormat", "CheckFormatter", "RenderOptions"]
