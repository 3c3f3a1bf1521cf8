"""The one render layer: what a report is, and the one function that renders it.

Every command's report is a :class:`Report`: a ``document`` function (the result -> the
one record form, a JSON-ready dict) and one renderer per ``--format`` value it offers
(the result -> finished text). ``json`` is always the document itself, serialised and
redacted by :func:`~kaudit.report.output.to_json`, unless the report brings its own.
Commands call :func:`render` and write the text with :func:`~kaudit.report.output.emit`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from kaudit.report.output import to_json

Result = TypeVar("Result")


@dataclass(frozen=True)
class RenderOptions:
    """What a renderer may need beyond the result itself."""

    tool_version: str = ""
    color: bool = False
    """Table only: ANSI colours (see :func:`~kaudit.report.output.use_color`)."""
    width: int | None = None
    """Table only: the terminal's width to fit (see :func:`~kaudit.report.output.
    table_width`); None for the wide layout (``--wide``)."""


Renderer = Callable[[Any, RenderOptions], str]
"""A renderer: the result and the options in, the finished text out."""


@dataclass(frozen=True)
class Report(Generic[Result]):
    """One kind of report: its record form and its text formats."""

    name: str
    """The command (or subcommand) whose report this is."""
    document: Callable[[Result], dict[str, Any]]
    """The one record form every machine format builds on; it carries its own ``schema``
    value, e.g. ``kaudit.probe/v1``."""
    renderers: Mapping[str, Renderer] = field(default_factory=lambda: MappingProxyType({}))
    """Text formats by ``--format`` value; ``json`` defaults to the document."""

    @property
    def formats(self) -> tuple[str, ...]:
        """Every ``--format`` value this report renders."""
        return tuple(dict.fromkeys(("json", *self.renderers)))


def render(report: Report[Result], result: Result, fmt: str,
           options: RenderOptions | None = None) -> str:
    """``result`` rendered as ``fmt`` (one of ``report.formats``)."""
    options = options or RenderOptions()
    renderer = report.renderers.get(str(fmt))
    if renderer is not None:
        return renderer(result, options)
    if str(fmt) == "json":
        return to_json(report.document(result))
    raise ValueError(f"the {report.name} report has no {fmt} format")


def text_only(function: Callable[[Any], str]) -> Renderer:
    """A renderer from a function that needs no options."""
    return lambda result, _options: function(result)
