"""The CLI's command tree as plain data, read from the real typer/click objects.

The man pages are written from this model, never from hand-kept lists, so a
command, option, metavar, default or choice added to the CLI reaches the
pages on the next ``python -m kaudit.docs`` (and the drift test says so until
then).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import typer.main

from kaudit.cli.clicompat import Group, Option


@dataclass(frozen=True)
class OptionDoc:
    """One option of one command, as a man page lists it."""

    names: tuple[str, ...]
    """``("-p", "--policy")``: short names first."""
    negations: tuple[str, ...]
    """The off switch of a boolean pair (``--no-purge``), if any."""
    value: str | None
    """What follows the option: its metavar (``FILE``), ``error|warning|info`` for a
    choice, the type (``INT``); None for flags and counters."""
    choices: tuple[str, ...]
    case_sensitive: bool
    default: str | None
    """The default as the user would type it; None when there is nothing to show."""
    help: str
    multiple: bool
    counted: bool
    required: bool
    panel: str | None
    """Help panel (``Connection``) the option is grouped under, if any."""

    @property
    def flags(self) -> tuple[str, ...]:
        """Every spelling of the option (names and negations)."""
        return self.names + self.negations

    def notes(self, value: Callable[[str], str]) -> list[str]:
        """What a page says after the help text (required, case, default, repeatable), the
        default shown through ``value`` (bold in roff, code in Markdown)."""
        notes = []
        if self.required:
            notes.append("Required.")
        if self.choices and not self.case_sensitive:
            notes.append("Values are case-insensitive.")
        if self.default is not None:
            notes.append(f"Default: {value(self.default)}.")
        if (self.multiple or self.counted) and "repeat" not in self.help.lower() \
                and "-vv" not in self.help:
            notes.append("May be given more than once.")
        return notes


@dataclass(frozen=True)
class ArgumentDoc:
    """One positional argument."""

    name: str
    help: str
    required: bool
    variadic: bool


@dataclass(frozen=True)
class CommandDoc:
    """One command (or group) and everything below it."""

    path: tuple[str, ...]
    """``("kaudit", "lab", "up")``."""
    help: str
    short_help: str
    options: tuple[OptionDoc, ...]
    arguments: tuple[ArgumentDoc, ...]
    subcommands: tuple[CommandDoc, ...]
    is_group: bool

    @property
    def name(self) -> str:
        """The command as typed: ``kaudit lab up``."""
        return " ".join(self.path)

    @property
    def page(self) -> str:
        """The man page name of a top-level command: ``kaudit-lab``."""
        return "-".join(self.path[:2])

    def walk(self) -> list[CommandDoc]:
        """This command and every command below it, depth first, in CLI order."""
        out = [self]
        for sub in self.subcommands:
            out.extend(sub.walk())
        return out


def command_tree(app: typer.Typer | None = None, prog: str = "kaudit") -> CommandDoc:
    """The command tree of ``app`` (kaudit's own by default)."""
    if app is None:
        from kaudit.cli.app import app as kaudit_app

        app = kaudit_app
    command = typer.main.get_command(app)
    return _command(command, (prog,), None)


def _command(command: Any, path: tuple[str, ...], parent_ctx: Any) -> CommandDoc:
    ctx = command.context_class(command, info_name=path[-1], parent=parent_ctx,
                                **command.context_settings)
    options: list[OptionDoc] = []
    arguments: list[ArgumentDoc] = []
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, Option):
            options.append(_option(param, ctx))
        elif param.param_type_name == "argument":
            arguments.append(ArgumentDoc(
                name=_argument_name(param.metavar or param.name or "ARG"),
                help=_clean(getattr(param, "help", None) or ""),
                required=bool(param.required), variadic=param.nargs == -1))
    subcommands: list[CommandDoc] = []
    is_group = isinstance(command, Group)
    if is_group:
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                subcommands.append(_command(sub, (*path, name), ctx))
    help_text = _clean(command.help or "")
    return CommandDoc(
        path=path, help=help_text,
        short_help=_clean(command.get_short_help_str(limit=300)) if help_text else "",
        options=tuple(options), arguments=tuple(arguments), subcommands=tuple(subcommands),
        is_group=is_group)


def _argument_name(metavar: str) -> str:
    # A metavar may already be written as usage ("[PATH]..."); the page adds the
    # brackets and the ellipsis itself, from required and nargs.
    return metavar.replace("...", "").strip("[]").upper()


def _clean(text: str) -> str:
    # click's \b (no-rewrap marker) means nothing in roff or Markdown.
    return inspect.cleandoc(text.replace("\b", "")).strip()


def _option(param: Any, ctx: Any) -> OptionDoc:
    names = tuple(sorted(param.opts, key=lambda o: (o.startswith("--"), param.opts.index(o))))
    choices, case_sensitive = _choices(param)
    counted = bool(getattr(param, "count", False))
    is_flag = bool(getattr(param, "is_flag", False))
    if is_flag or counted:
        value = None
    elif param.metavar:
        value = str(param.metavar)
    elif choices:
        value = "|".join(choices)
    else:
        value = _type_name(param, ctx)
    return OptionDoc(
        names=names, negations=tuple(param.secondary_opts), value=value, choices=choices,
        case_sensitive=case_sensitive, default=_default(param, ctx, counted),
        help=_clean(param.help or ""), multiple=bool(param.multiple), counted=counted,
        required=bool(param.required), panel=getattr(param, "rich_help_panel", None))


def _choices(param: Any) -> tuple[tuple[str, ...], bool]:
    # typer >= 0.25 describes types with a TypeDescriptor; older ones use click.Choice.
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None and getattr(descriptor, "is_choice", False):
        raw, case_sensitive = descriptor.choices or (), descriptor.case_sensitive
    elif hasattr(getattr(param, "type", None), "choices"):
        raw, case_sensitive = param.type.choices, param.type.case_sensitive
    else:
        return (), True
    return tuple(_as_text(c) for c in raw), bool(case_sensitive)


def _type_name(param: Any, ctx: Any) -> str:
    if hasattr(param, "display_type"):
        shown = str(param.display_type(ctx)).strip("<>")
    else:  # click's own Option
        shown = str(param.make_metavar(ctx))
    shown = shown.removeprefix("list[").removesuffix("]").upper()
    return _TYPE_NAMES.get(shown, shown)


# typer names types as Python does; man pages use click's words.
_TYPE_NAMES = {"STR": "TEXT", "INT": "INTEGER", "FLOAT": "NUMBER", "BOOL": "BOOLEAN"}


def _default(param: Any, ctx: Any, counted: bool) -> str | None:
    if counted:
        return None
    if isinstance(param.show_default, str):
        return str(param.show_default)
    default = param.get_default(ctx, call=False)
    if default is None or callable(default):
        return None
    if getattr(param, "is_flag", False):
        if param.secondary_opts:
            return str(param.opts[0] if default else param.secondary_opts[0])
        return None  # a plain on-switch is off unless given
    if isinstance(default, (list, tuple)):
        return ", ".join(_as_text(d) for d in default) or None
    return _as_text(default)


def _as_text(value: Any) -> str:
    return str(value.value) if isinstance(value, Enum) else str(value)
