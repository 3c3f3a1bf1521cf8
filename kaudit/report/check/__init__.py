"""Output formats of ``kaudit check``: one registry keyed by ``--format``.

Every formatter takes the same :class:`~kaudit.check.findings.CheckResult` (already
redacted) and returns text; machine formats build on the record form in
:mod:`kaudit.report.check.record`. Write the text with :func:`kaudit.report.output.emit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from types import MappingProxyType

from kaudit.check.findings import CheckResult
from kaudit.report.check.github import render_github
from kaudit.report.check.json_format import render_json
from kaudit.report.check.junit import render_junit
from kaudit.report.check.record import RenderOptions, redacted_result
from kaudit.report.check.sarif import render_sarif
from kaudit.report.check.table import render_table


class CheckFormat(StrEnum):
    """Values of ``kaudit check --format``."""

    table = "table"
    json = "json"
    junit = "junit"
    sarif = "sarif"
    github = "github"


CheckFormatter = Callable[[CheckResult, RenderOptions], str]
"""A formatter: the (redacted) result and the options in, the finished text out."""

CHECK_FORMATTERS: Mapping[CheckFormat, CheckFormatter] = MappingProxyType(
    {
        CheckFormat.table: render_table,
        CheckFormat.json: render_json,
        CheckFormat.junit: render_junit,
        CheckFormat.sarif: render_sarif,
        CheckFormat.github: render_github,
    }
)
"""The registry: one formatter per :class:`CheckFormat` (a test keeps them in step)."""


def render_check(
    result: CheckResult, fmt: CheckFormat, *, tool_version: str, color: bool = False
) -> str:
    """Render ``result`` as ``fmt``.

    Secrets are masked here, before any escaping or wrapping (which could hide them from a
    later pass over the text); ``emit`` masks once more on the way out. ``color`` affects
    ``table`` only; pass True only on a TTY without ``NO_COLOR``.
    """
    formatter = CHECK_FORMATTERS[fmt]
    return formatter(redacted_result(result), RenderOptions(tool_version=tool_version, color=color))


__all__ = ["CHECK_FORMATTERS", "CheckFormat", "CheckFormatter", "RenderOptions", "render_check"]
