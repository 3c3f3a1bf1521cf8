"""Read YAML as a node tree so every error can name the file and line.

``yaml.safe_load`` throws the line numbers away; ``yaml.compose`` keeps them
on each node. The helpers here turn nodes into plain Python values and raise
:class:`~kaudit.errors.FileInputError` (``file:line: message``) for anything
that is not what the schema expects.

Policy files, client config files and Strimzi manifests are all read this way;
the module knows no schema of its own and imports nothing of kaudit but
:mod:`kaudit.errors`, so any layer may use it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from datetime import date
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kaudit.errors import FileInputError, InputError, unreadable

_TAG = "tag:yaml.org,2002:"
_KIND_NAMES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "null": "nothing (null)",
    "timestamp": "a date",
}


def line_of(node: Node) -> int:
    """1-based line where ``node`` starts."""
    return int(node.start_mark.line) + 1


def describe(node: Node) -> str:
    """What a node is, in the words of an error message ("a list", "an integer")."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return _KIND_NAMES.get(node.tag.removeprefix(_TAG), "a value")


def compose_text(text: str, path: str) -> Node | None:
    """Compose one YAML document; syntax errors become file:line errors."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise FileInputError(path, line, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        # ReaderError (control characters) has a position but no mark.
        raise FileInputError(path, None, f"invalid YAML: {exc}") from None
    except RecursionError:
        raise FileInputError(path, None, "invalid YAML: nested too deeply") from None
    except (OverflowError, ValueError) as exc:
        # PyYAML's scanner turns an escape such as "\U7fffffff" into chr() unchecked.
        raise FileInputError(path, None, f"invalid YAML: a bad escape sequence ({exc})"
                             ) from None


def read_text(path: str | Path) -> str:
    """A file's text; a missing or unreadable file is an input error (exit 2)."""
    p = Path(path).expanduser()
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory, expected a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(p, exc) from None


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A ``did you mean 'x'?`` hint when ``word`` looks like a typo of a choice."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


class NodeReader:
    """Typed access to the nodes of one file, with ``file:line`` errors."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: Node | None, message: str, hint: str | None = None) -> FileInputError:
        """An error at ``node``'s line (raise the result)."""
        return FileInputError(self.path, line_of(node) if node is not None else None, message,
                              hint=hint)

    def mapping(self, node: Node, what: str, allowed: Iterable[str] | None = None,
                required: Iterable[str] = ()) -> dict[str, tuple[ScalarNode, Node]]:
        """A mapping's entries by key: ``{key: (key_node, value_node)}``.

        Keys must be strings and unique; with ``allowed``, unknown keys are
        rejected with a did-you-mean hint.
        """
        if not isinstance(node, MappingNode):
            raise self.fail(node, f"{what} must be a mapping, not {describe(node)}")
        allowed_keys = list(allowed) if allowed is not None else None
        out: dict[str, tuple[ScalarNode, Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _TAG + "null":
                raise self.fail(key_node, f"{what} has a key that is not a name")
            key = str(key_node.value)
            if key in out:
                raise self.fail(key_node, f"{what} sets '{key}' twice "
                                f"(first on line {line_of(out[key][0])})")
            if allowed_keys is not None and key not in allowed_keys:
                raise self.fail(key_node, f"unknown key '{key}' in {what}",
                                hint=did_you_mean(key, allowed_keys)
                                or f"allowed: {', '.join(allowed_keys)}")
            out[key] = (key_node, value_node)
        for key in required:
            if key not in out:
                raise self.fail(node, f"{what} needs '{key}'")
        return out

    def sequence(self, node: Node, what: str) -> list[Node]:
        """A list's items."""
        if not isinstance(node, SequenceNode):
            raise self.fail(node, f"{what} must be a list, not {describe(node)}")
        return list(node.value)

    def _scalar(self, node: Node, what: str, expected: str) -> ScalarNode:
        if not isinstance(node, ScalarNode):
            raise self.fail(node, f"{what} must be {expected}, not {describe(node)}")
        return node

    def text(self, node: Node, what: str) -> str:
        """A non-empty string. Plain numbers are taken as text (a topic may be ``2024``)."""
        scalar = self._scalar(node, what, "a string")
        if scalar.tag in (_TAG + "null", _TAG + "bool"):
            raise self.fail(node, f"{what} must be a string, not {describe(node)}")
        value = str(scalar.value)
        if not value.strip():
            raise self.fail(node, f"{what} must not be empty")
        return value

    def integer(self, node: Node, what: str, minimum: int | None = None) -> int:
        """An integer, optionally at least ``minimum``."""
        scalar = self._scalar(node, what, "an integer")
        if scalar.tag != _TAG + "int":
            raise self.fail(node, f"{what} must be an integer, not {describe(node)}")
        try:
            value = int(str(scalar.value).replace("_", ""), 0)
        except ValueError:
            raise self.fail(node, f"{what} must be an integer, not '{scalar.value}'") from None
        if minimum is not None and value < minimum:
            raise self.fail(node, f"{what} must be at least {minimum}, not {value}")
        return value

    def boolean(self, node: Node, what: str) -> bool:
        """true or false."""
        scalar = self._scalar(node, what, "true or false")
        if scalar.tag != _TAG + "bool":
            raise self.fail(node, f"{what} must be true or false, not {describe(node)}")
        return str(scalar.value).lower() in ("true", "yes", "on", "y")

    def day(self, node: Node, what: str) -> date:
        """A calendar date written YYYY-MM-DD."""
        scalar = self._scalar(node, what, "a date (YYYY-MM-DD)")
        raw = str(scalar.value).strip()
        if scalar.tag in (_TAG + "timestamp", _TAG + "str") and re.fullmatch(
                r"\d{4}-\d{2}-\d{2}", raw):
            try:
                return date.fromisoformat(raw)
            except ValueError as exc:
                raise self.fail(node, f"{what} is not a real date: '{raw}' ({exc})") from None
        raise self.fail(node, f"{what} must be a date written YYYY-MM-DD, not '{raw}'")

    def choice(self, node: Node, what: str, choices: Iterable[str]) -> str:
        """One of ``choices`` (compared as text)."""
        options = list(choices)
        scalar = self._scalar(node, what, f"one of {', '.join(options)}")
        value = str(scalar.value)
        if scalar.tag == _TAG + "bool" or value not in options:
            raise self.fail(node, f"{what} must be one of {', '.join(options)}, not '{value}'",
                            hint=did_you_mean(value, options))
        return value

    def text_list(self, node: Node, what: str,
                  allow_empty: bool = False) -> list[tuple[str, Node]]:
        """One string or a list of strings, each with its node."""
        if isinstance(node, ScalarNode):
            return [(self.text(node, what), node)]
        items = self.sequence(node, what)
        if not items and not allow_empty:
            raise self.fail(node, f"{what} must not be an empty list")
        return [(self.text(item, f"each item of {what}"), item) for item in items]
