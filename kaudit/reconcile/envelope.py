"""Debezium change events (``--envelope debezium``): each record's row state, so that
upsert mode compares the topic's final state per key with the sink.

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

OPS = ("c", "r", "u", "d")
ENVELOPE_PROBLEM = "_envelope_problem"


def unwrap(event: Any) -> Any:
    """The event inside Kafka Connect's ``{"schema", "payload"}`` wrapper, or as it is."""
    if isinstance(event, dict) and "payload" in event and "schema" in event:
        return event["payload"]
    return event


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


def debezium_texts(raw: Any) -> Any:
    """``raw`` as the JSON decoder reads it: ``_tombstone`` (a delete or a tombstone),
    ``_text`` (the row the event leaves, or a delete's ``before`` for its key) and
    :data:`ENVELOPE_PROBLEM` (null, or ``op`` where the event is not one)."""
    from pyspark.sql import functions as F

    text = F.col("value").cast("string")
    frame = raw.select("partition", "offset", "timestamp", "key",
                       F.col("value").isNull().alias("_tombstone"), text.alias("_value"))
    value = F.col("_value")
    # Connect's JSON converter with schemas on wraps the event: {"schema":..,"payload":..}.
    event = F.coalesce(F.get_json_object(value, "$.payload"), value)
    frame = frame.select("*", event.alias("_event"))
    event = F.col("_event")
    op = F.get_json_object(event, "$.op")
    frame = frame.select("*", op.alias("_op"))
    op = F.col("_op")
    deleted = op == F.lit("d")
    row = F.when(deleted, F.get_json_object(event, "$.before")).otherwise(
        F.get_json_object(event, "$.after"))
    problem = F.when(~F.col("_tombstone") & (op.isNull() | ~op.isin(*OPS)), F.lit("op"))
    return frame.select(
        "partition", "offset", "timestamp", "key",
        (F.col("_tombstone") | F.coalesce(deleted, F.lit(False))).alias("_tombstone"),
        F.when(F.col("_tombstone"), F.lit(None).cast("string")).otherwise(row).alias("_text"),
        problem.alias(ENVELOPE_PROBLEM), F.col("_value"))
