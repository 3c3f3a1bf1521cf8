"""What every kaudit command does as a click command, whichever module declares it: its help
keeps every token whole, its float options refuse nan and inf, and Ctrl-C anywhere ends it
with one line."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from kaudit.cli.clicompat import (
    BadParameter,
    Command,
    Context,
    FloatParamType,
    Group,
    HelpFormatter,
)

_KEPT = "\u2011"
"""A non-breaking hyphen: click's wrapper breaks lines after an ASCII hyphen inside a word
(``bounce-`` / ``leader:N``), never after this one. It stands in for every hyphen while a
text is wrapped, and is written back as ``-``: a value copied or grepped from the help is
the one to type."""


def _kept(text: str) -> str:
    return text.replace("-", _KEPT)


class WholeTokenHelp(HelpFormatter):
    """click's help formatter, wrapping only at spaces."""

    def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30,
                 col_spacing: int = 2) -> None:
        super().write_dl([(term, _kept(text)) for term, text in rows], col_max, col_spacing)

    def write_text(self, text: str) -> None:
        super().write_text(_kept(text))

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        super().write_usage(prog, _kept(args), prefix)

    def write(self, string: str) -> None:
        super().write(string.replace(_KEPT, "-"))


class KauditContext(Context):
    """Every command's context: its help through :class:`WholeTokenHelp`."""

    formatter_class = WholeTokenHelp


class Interrupted(Exception):
    """Ctrl-C reached the command itself (one without its own interrupt handling): typer
    would end it with exit 130 and nothing said; ``main`` says "interrupted"."""


class KauditGroup(Group):
    """The root command: a KeyboardInterrupt from any command becomes :class:`Interrupted`
    before typer turns it into a silent exit."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted from None
        except SystemError as exc:
            # Ctrl-C inside a C extension's call (librdkafka's admin client): it returns
            # with the KeyboardInterrupt pending, and Python raises this in its place.
            if _caused_by_interrupt(exc):
                raise Interrupted from None
            raise


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def commands(command: Command) -> Iterator[Command]:
    """``command`` and every subcommand under it."""
    yield command
    if isinstance(command, Group):
        for sub in command.commands.values():
            yield from commands(sub)


def prepared(root: Command) -> Command:
    """``root``'s commands given kaudit's context, and their float options made finite."""
    for command in commands(root):
        command.context_class = KauditContext
        for param in command.params:
            if isinstance(param.type, FloatParamType):
                _finite(param.type)
    return root


def _finite(float_type: FloatParamType) -> None:
    """click's float ranges let nan and inf through (every comparison with NaN is false),
    and a NaN rate or timeout would reach the reports as invalid JSON or crash a
    conversion."""
    convert = float_type.convert

    def finite(value: Any, param: Any, ctx: Any) -> Any:
        number = convert(value, param, ctx)
        if not math.isfinite(number):
            raise BadParameter(f"{value!r} is not a finite number.", ctx, param)
        return number

    setattr(float_type, "convert", finite)  # noqa: B010 - mypy refuses a method assigned
