"""Named connection contexts from ``~/.config/kaudit/config.yaml``.

Example::

    current-context: lab
    contexts:
      lab:
        bootstrap-server: 127.0.0.1:9092
      prod:
        bootstrap-server: kafka-1.prod:9093,kafka-2.prod:9093
        command-config: ~/.config/kaudit/prod.properties
        properties:
          client.id: kaudit-audit
        timeout: 30
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.errors import FileInputError, InputError, unreadable

MAX_TIMEOUT = 86400.0
"""The longest --timeout, one day: librdkafka counts its waits in int milliseconds, and a
far larger one wraps around into an immediate timeout."""

CONTEXT_KEYS = ("bootstrap-server", "command-config", "properties", "timeout")


@dataclass(frozen=True)
class Context:
    """One named set of connection defaults."""

    name: str
    bootstrap_server: str | None = None
    command_config: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None


def config_path() -> Path:
    """Where the kaudit config file lives: ``KAUDIT_CONFIG`` or the XDG default."""
    env = os.environ.get("KAUDIT_CONFIG")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "kaudit" / "config.yaml"


def _line(node: Any) -> int | None:
    mark = getattr(node, "start_mark", None)
    return mark.line + 1 if mark is not None else None


def load_context(name: str | None) -> Context | None:
    """Load context ``name`` (or the file's ``current-context``); None when there is none.

    Naming a context that does not exist, or a malformed file, is an input error.
    """
    path = config_path()
    if not path.exists():
        if name:
            raise InputError(f"context {name!r} requested but {path} does not exist")
        return None
    import yaml  # here, not at the top: `kaudit --help` does not read YAML

    try:
        text = path.read_text(encoding="utf-8")
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise FileInputError(
            str(path),
            mark.line + 1 if mark else None,
            f"invalid YAML: {getattr(exc, 'problem', exc)}",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None
    if root is None:
        if name:
            raise InputError(f"{path}: no contexts defined (wanted {name!r})")
        return None
    if not isinstance(root, yaml.MappingNode):
        raise FileInputError(str(path), _line(root), "expected a mapping at the top level")
    data = yaml.safe_load(text)
    nodes = {k.value: v for k, v in root.value}
    unknown = set(data) - {"current-context", "contexts"}
    if unknown:
        key = sorted(unknown)[0]
        key_node = next(k for k, _ in root.value if k.value == key)
        raise FileInputError(
            str(path), _line(key_node), f"unknown key {key!r} (expected current-context, contexts)"
        )
    wanted = name or data.get("current-context")
    if not wanted:
        return None
    contexts = data.get("contexts") or {}
    if not isinstance(contexts, dict) or wanted not in contexts:
        known = ", ".join(sorted(contexts)) if isinstance(contexts, dict) else ""
        raise FileInputError(
            str(path),
            _line(nodes.get("contexts")),
            f"no context named {wanted!r}" + (f" (have: {known})" if known else ""),
        )
    body = contexts[wanted] or {}
    ctx_nodes = {k.value: (k, v) for k, v in nodes["contexts"].value}
    ctx_node = ctx_nodes[wanted][1]
    if not isinstance(body, dict):
        raise FileInputError(str(path), _line(ctx_node), f"context {wanted!r} must be a mapping")
    for key in body:
        if key not in CONTEXT_KEYS:
            key_node = next(k for k, _ in ctx_node.value if k.value == key)
            raise FileInputError(
                str(path),
                _line(key_node),
                f"unknown key {key!r} in context {wanted!r} "
                f"(expected one of {', '.join(CONTEXT_KEYS)})",
            )
    props = body.get("properties") or {}
    if not isinstance(props, dict):
        raise FileInputError(str(path), _line(ctx_node), "properties must be a mapping")
    timeout = body.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float)
        or not 0 < timeout <= MAX_TIMEOUT  # a YAML .nan fails this too
    ):
        raise FileInputError(str(path), _line(ctx_node),
                             f"timeout must be a number of seconds above 0 and at most "
                             f"{MAX_TIMEOUT:g}")
    return Context(
        name=wanted,
        bootstrap_server=body.get("bootstrap-server"),
        command_config=body.get("command-config"),
        properties={str(k): str(v) for k, v in props.items()},
        timeout=float(timeout) if timeout is not None else None,
    )
