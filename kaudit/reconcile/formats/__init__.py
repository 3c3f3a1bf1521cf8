"""The value formats ``kaudit reconcile`` reads, registered once: :data:`VALUE_FORMATS`.

Each is a :class:`~kaudit.reconcile.formats.base.ValueFormat` that carries everything
reconcile does differently for it (its schemas, the field check, the fields' types, the
decoder, the sink's shaping, a Debezium sample's event); the CLI's ``--value-format``
choices and its help are read from here. Importable without Spark: the CLI's start-up
reads it.
"""

from __future__ import annotations

from typing import Any

from kaudit.errors import InputError
from kaudit.reconcile.formats.avro import AVRO, AVRO_PLAIN
from kaudit.reconcile.formats.base import ValueFormat
from kaudit.reconcile.formats.json import JSON
from kaudit.reconcile.formats.text import BYTES, STRING

#: ``--value-format`` name -> its format, in the order the CLI lists them.
VALUE_FORMATS: dict[str, ValueFormat] = {f.name: f for f in (JSON, STRING, BYTES, AVRO,
                                                             AVRO_PLAIN)}

#: Why an envelope cannot wrap a format's values ({} is the format's name).
_REFUSED = {
    "connect": "--envelope connect is Kafka Connect's JSON converter wrapper: it needs "
               "--value-format json, not {}",
    "debezium": "--envelope debezium reads change events in JSON or Avro, not "
                "--value-format {}",
}


def value_format(name: str) -> ValueFormat:
    """The format ``--value-format NAME`` names; another name is exit 2."""
    try:
        return VALUE_FORMATS[name]
    except KeyError:
        raise InputError(f"--value-format {name}: not one of "
                         f"{', '.join(VALUE_FORMATS)}") from None


def value_format_help() -> str:
    """``--value-format``'s help, its formats' notes in it."""
    notes = "; ".join(f.note for f in VALUE_FORMATS.values() if f.note)
    return f"How values are decoded ({notes})."


def mode_for(envelope: str, mode: str | None, value_format_name: str = "json") -> Any:
    """The comparison mode: the one given, else append; a Debezium topic's is upsert (its
    final state per key), and no other. An envelope the format cannot carry is exit 2."""
    if envelope not in value_format(value_format_name).envelopes:
        raise InputError(_REFUSED[envelope].format(value_format_name))
    if envelope == "debezium":
        if mode not in (None, "upsert"):
            raise InputError(f"--envelope debezium compares each key's final state: it "
                             f"implies --mode upsert, not {mode}")
        return "upsert"
    return mode or "append"


__all__ = ["VALUE_FORMATS", "ValueFormat", "mode_for", "value_format", "value_format_help"]
