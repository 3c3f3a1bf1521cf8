"""What a value wraps: Debezium change events (``--envelope debezium``), each record's row
state, so that upsert mode compares the topic's final state per key with the sink; and
Kafka Connect's JSON converter wrapper (``--envelope connect``), whose ``payload`` is the
record a sink connector writes.

An event is ``{"before": ..., "after": ..., "op": ..., "source": ..., "ts_ms": ...}``, or
the same inside ``{"schema": ..., "payload": ...}`` (Kafka Connect's JSON converter with
schemas on). ``c`` (create), ``r`` (snapshot read) and ``u`` (update) leave the row as
``after``; ``d`` (delete) and a tombstone (a null value, which Debezium sends after a
delete for log compaction) leave no row. A delete's key fields are read from ``before``.
An event without ``op``, or with one Debezium does not write, is undecodable (field
``op``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kaudit.errors import InputError
from kaudit.reconcile.classes import KEY_PROBLEM

OPS = ("c", "r", "u", "d")
ENVELOPE_PROBLEM = "_envelope_problem"


def wrapped(event: Any) -> bool:
    """Whether ``event`` is in Kafka Connect's ``{"schema", "payload"}`` wrapper."""
    return isinstance(event, dict) and "payload" in event and "schema" in event


def unwrap(event: Any) -> Any:
    """The event inside Kafka Connect's ``{"schema", "payload"}`` wrapper, or as it is."""
    return event["payload"] if wrapped(event) else event


def wrapper_schema(samples: Iterable[bytes | str | None]) -> dict[str, Any] | None:
    """The schema of the first sampled value in Connect's wrapper (``schemas.enable=true``),
    or None."""
    for text in samples:
        if text is None:
            continue
        try:
            event = json.loads(text)
        except (ValueError, UnicodeDecodeError):
            continue
        if wrapped(event) and isinstance(event["schema"], dict):
            return dict(event["schema"])
    return None


def connect_rows(samples: Iterable[bytes | str | None]) -> list[str]:
    """The records of sampled values, each taken out of Kafka Connect's wrapper (for the
    field check)."""
    rows = []
    for text in samples:
        if text is None:
            continue
        try:
            rows.append(json.dumps(unwrap(json.loads(text))))
        except (ValueError, UnicodeDecodeError):
            continue  # undecodable, counted and shown by the run
    return rows


def connect_texts(raw: Any) -> Any:
    """``raw`` as the JSON decoder reads it (``_tombstone``, ``_text``), each value's text
    its ``payload`` where Kafka Connect's JSON converter wrapped it in ``{"schema",
    "payload"}`` (``schemas.enable=true``), else the value as it is."""
    from pyspark.sql import functions as F

    frame = raw.select("partition", "offset", "timestamp", "key", KEY_PROBLEM,
                       F.col("value").isNull().alias("_tombstone"),
                       F.col("value").cast("string").alias("_value"))
    outer = F.from_json(F.col("_value"), "schema string, payload string")
    frame = frame.select("*", outer.alias("_outer"))
    wrapped = F.col("_outer.schema").isNotNull() & F.col("_outer.payload").isNotNull()
    return frame.select("partition", "offset", "timestamp", "key", KEY_PROBLEM, "_tombstone",
                        F.when(wrapped, F.col("_outer.payload")).otherwise(F.col("_value"))
                        .alias("_text"))


def event_context(value: bytes | str | None) -> dict[str, Any] | None:
    """What a sample shows of the change event behind it: its ``op``, ``ts_ms`` (when
    Debezium handled it), the source's own ``ts_ms`` (when the database committed it) and
    the transaction metadata, when the connector adds it. None for what is not an event."""
    if value is None:
        return None
    try:
        event = unwrap(json.loads(value))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(event, dict) or "op" not in event:
        return None
    source = event.get("source")
    if not isinstance(source, dict):
        source = {}
    return {"op": event["op"], "ts_ms": event.get("ts_ms"),
            "source_ts_ms": source.get("ts_ms"), "transaction": event.get("transaction")}


def check_events(topic: str, samples: Iterable[bytes | str | None]) -> list[str]:
    """The row texts (``after``, or a delete's ``before``) of sampled events, for the field
    check; an event without ``op`` is exit 2: the topic does not carry Debezium events."""
    rows = []
    for text in samples:
        if text is None:
            continue  # a tombstone
        try:
            event = unwrap(json.loads(text))
        except (ValueError, UnicodeDecodeError):
            continue  # undecodable, counted and shown by the run
        if not isinstance(event, dict) or "op" not in event:
            shown = (text.decode(errors="replace") if isinstance(text, bytes) else text)[:80]
            raise InputError(f"topic {topic}: a sampled value has no \"op\": not a Debezium "
                             f"change event ({shown})")
        row = event.get("before" if event["op"] == "d" else "after")
        if isinstance(row, dict):
            rows.append(json.dumps(row))
    return rows


_NOT_JSON = "_kaudit_not_json"


def debezium_texts(raw: Any) -> Any:
    """``raw`` as the JSON decoder reads it: ``_tombstone`` (a delete or a tombstone),
    ``_text`` (the row the event leaves, or a delete's ``before`` for its key),
    ``_value`` (the value's text) and :data:`ENVELOPE_PROBLEM` (null; ``""`` where the
    value is not a JSON object; ``op`` where it is one but no change event)."""
    from pyspark.sql import functions as F

    # Read as text fields, an object is handed over as its JSON text: one parse of the
    # envelope, and one more of the payload where Connect's JSON converter wrapped it.
    event_ddl = "op string, before string, after string"
    frame = raw.select("partition", "offset", "timestamp", "key", KEY_PROBLEM,
                       F.col("value").isNull().alias("_tombstone"),
                       F.col("value").cast("string").alias("_value"))
    outer = F.from_json(F.col("_value"), f"schema string, payload string, {event_ddl}, "
                        f"{_NOT_JSON} string",
                        {"columnNameOfCorruptRecord": _NOT_JSON, "mode": "PERMISSIVE"})
    frame = frame.select("*", outer.alias("_outer"))
    wrapped = F.col("_outer.schema").isNotNull() & F.col("_outer.payload").isNotNull()
    event = F.when(wrapped, F.from_json(F.col("_outer.payload"), event_ddl)).otherwise(
        F.struct(*(F.col(f"_outer.{f}").alias(f) for f in ("op", "before", "after"))))
    frame = frame.select("*", event.alias("_event"))
    op, deleted = F.col("_event.op"), F.col("_event.op") == F.lit("d")
    row = F.when(deleted, F.col("_event.before")).otherwise(F.col("_event.after"))
    # A value that is no JSON object is undecodable as a whole (""), as a bare JSON value
    # is; "op" is for a JSON event without a valid op.
    problem = F.when(F.col("_tombstone"), F.lit(None).cast("string")).when(
        F.col("_outer").isNull() | F.col(f"_outer.{_NOT_JSON}").isNotNull(), F.lit("")).when(
        op.isNull() | ~op.isin(*OPS), F.lit("op"))
    return frame.select(
        "partition", "offset", "timestamp", "key", KEY_PROBLEM,
        (F.col("_tombstone") | F.coalesce(deleted, F.lit(False))).alias("_tombstone"),
        F.when(F.col("_tombstone"), F.lit(None).cast("string")).otherwise(row).alias("_text"),
        problem.alias(ENVELOPE_PROBLEM), F.col("_value"))
