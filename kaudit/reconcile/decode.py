"""A topic's records as the comparison reads them: :func:`decode_topic`.

The message key is read first (an Avro key by spark-avro), then the value by its format
(:mod:`kaudit.reconcile.formats`); the columns the formats' decoders give are put in the
comparison's order here. The key is one text, made alike on both sides by
:func:`~kaudit.reconcile.formats.base.joined_key`.
"""

from __future__ import annotations

from typing import Any

from kaudit.reconcile.classes import KAFKA_KEY, KEY_PROBLEM, RAW_VALUE, UNDECODABLE
from kaudit.reconcile.formats import value_format
from kaudit.reconcile.formats.avro_decode import decode_key
from kaudit.reconcile.formats.base import Decoded, joined_key
from kaudit.reconcile.request import ReconcileRequest


def decode_topic(raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Any:
    """partition, offset, timestamp, tombstone, key, the compare columns (sink names) as
    their ``targets`` types, and :data:`UNDECODABLE` / :data:`RAW_VALUE`.

    ``targets`` maps each key and compared field to the type it is read as (the sink
    column's, or the one ``--schema`` gives). A field present in a record is never read as
    null: JSON values are taken as text and converted. A record whose value is not a JSON
    object, or whose field does not convert, has :data:`UNDECODABLE` set (the field's name,
    "" for the whole value) and its raw text in :data:`RAW_VALUE`; when its key cannot be
    read its key is null (a key that is the message key alone is always read). An Avro
    message key is decoded first: one that does not decode makes its record undecodable
    (field ``@key``).
    """
    raw = decode_key(raw, request)
    return _topic_columns(value_format(request.value_format).decode(raw, request, targets),
                          request)


def _topic_columns(decoded: Decoded, request: ReconcileRequest) -> Any:
    """The decoded frame as the comparison reads it: its columns, named and in order."""
    from pyspark.sql import functions as F

    key = joined_key([(F.col("key") if k == KAFKA_KEY else decoded.key_texts[k]).cast("string")
                      for k in request.key_fields()])
    # A tombstone has no value to take key fields from: Kafka deletes by message key,
    # so a tombstone is matched by its message key (which names the same record).
    by_message_key = decoded.tombstone if decoded.by_message_key is None \
        else decoded.by_message_key
    key_problem = F.col(KEY_PROBLEM)
    # A value that did not decode loses the key only where the key is read from it: a key
    # that is the message key alone still names the record (the latest for its key).
    value_unread = decoded.key_unread if request.value_key_fields() else F.lit(False)
    key = (F.when(by_message_key, F.col("key").cast("string"))
           .when(value_unread | key_problem.isNotNull(), F.lit(None).cast("string"))
           .otherwise(key))
    columns = [F.col("partition"), F.col("offset"), F.col("timestamp"),
               decoded.tombstone.alias("tombstone"), key.alias("key")]
    columns += [decoded.values[c].alias(request.sink_column(c)) for c in request.compare]
    # A key that did not decode is the record's problem where its value has none.
    columns += [F.coalesce(F.col(UNDECODABLE), F.when(key_problem.isNotNull(), F.lit(
        KAFKA_KEY))).alias(UNDECODABLE),
        F.coalesce(decoded.raw_text, key_problem).alias(RAW_VALUE)]
    return decoded.frame.select(*columns)
