"""A topic's records as the comparison reads them: :func:`decode_topic`.

A JSON value's fields are read as text and converted to the types they are compared as, so
a field present in a record is never read as null; a record that cannot be decoded is kept,
marked :data:`UNDECODABLE`, with the start of its raw text. A string or bytes value is
compared as a whole. The key is one text, made alike on both sides by :func:`joined_key`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kaudit.errors import InputError
from kaudit.reconcile.avro_schemas import AVRO_FORMATS
from kaudit.reconcile.classes import KEY_PROBLEM, RAW_VALUE, UNDECODABLE
from kaudit.reconcile.envelope import ENVELOPE_PROBLEM, connect_texts, debezium_texts
from kaudit.reconcile.request import KAFKA_KEY, ReconcileRequest

#: How much of an undecodable value the samples show.
RAW_SAMPLE_CHARS = 200
_CORRUPT = "_kaudit_corrupt"


def decode_topic(raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Any:
    """partition, offset, timestamp, tombstone, key, the compare columns (sink names) as
    their ``targets`` types, and :data:`UNDECODABLE` / :data:`RAW_VALUE`.

    ``targets`` maps each key and compared field to the type it is read as (the sink
    column's, or the one ``--schema`` gives). A field present in a record is never read as
    null: JSON values are taken as text and converted. A record whose value is not a JSON
    object, or whose field does not convert, has :data:`UNDECODABLE` set (the field's name,
    "" for the whole value) and its raw text in :data:`RAW_VALUE`; when its key cannot be
    read its key is null. An Avro message key is decoded first: one that does not decode
    makes its record undecodable (field ``@key``).
    """
    from kaudit.reconcile.decode_avro import decode_key

    raw = decode_key(raw, request)
    if request.value_format == "json":
        decoded = _decode_json(raw, request, targets)
    elif request.value_format in AVRO_FORMATS:
        from kaudit.reconcile.decode_avro import decode_avro

        decoded = _Decoded(**decode_avro(raw, request))
    else:
        decoded = _read_whole_value(raw, request)
    return _topic_columns(decoded, request)


def joined_key(parts: list[Any]) -> Any:
    """One text key from the key fields' texts, alike on both sides: joined by "|", a
    missing part as "" (one field: its text as it is, without concat_ws's arrays)."""
    from pyspark.sql import functions as F

    texts = [F.coalesce(part, F.lit("")) for part in parts]
    return texts[0] if len(texts) == 1 else F.concat_ws("|", *texts)


@dataclass(frozen=True)
class _Decoded:
    """A topic frame and the columns decode_topic's result is made of."""

    frame: Any
    tombstone: Any
    #: Each compared field's value, by its topic name.
    values: dict[str, Any]
    #: Each key field's text (not @key's: that is the message key).
    key_texts: dict[str, Any]
    #: The key fields could not be read: the record's key is null.
    key_unread: Any
    #: The start of the value's text where it could not be decoded.
    raw_text: Any
    #: The tombstones matched by their message key (null: every tombstone is); a
    #: Debezium delete is matched by its ``before``'s key fields instead.
    by_message_key: Any = None


def _topic_columns(decoded: _Decoded, request: ReconcileRequest) -> Any:
    """The decoded frame as the comparison reads it: its columns, named and in order."""
    from pyspark.sql import functions as F

    key = joined_key([(F.col("key") if k == KAFKA_KEY else decoded.key_texts[k]).cast("string")
                      for k in request.key_fields()])
    # A tombstone has no value to take key fields from: Kafka deletes by message key,
    # so a tombstone is matched by its message key (which names the same record).
    by_message_key = decoded.tombstone if decoded.by_message_key is None \
        else decoded.by_message_key
    key_problem = F.col(KEY_PROBLEM)
    key = (F.when(by_message_key, F.col("key").cast("string"))
           .when(decoded.key_unread | key_problem.isNotNull(), F.lit(None).cast("string"))
           .otherwise(key))
    columns = [F.col("partition"), F.col("offset"), F.col("timestamp"),
               decoded.tombstone.alias("tombstone"), key.alias("key")]
    columns += [decoded.values[c].alias(request.sink_column(c)) for c in request.compare]
    # A key that did not decode is the record's problem where its value has none.
    columns += [F.coalesce(F.col(UNDECODABLE), F.when(key_problem.isNotNull(), F.lit(
        KAFKA_KEY))).alias(UNDECODABLE),
        F.coalesce(decoded.raw_text, key_problem).alias(RAW_VALUE)]
    return decoded.frame.select(*columns)


def _read_whole_value(raw: Any, request: ReconcileRequest) -> _Decoded:
    """A string or bytes value: compared as a whole, as its text or by its bytes' hash."""
    from pyspark.sql import functions as F

    keys = request.key_fields()
    for name in [*keys, *request.compare]:
        if name not in {"value", KAFKA_KEY}:
            raise InputError(f"--value-format {request.value_format}: fields cannot be "
                             f"read from the value; use --key @key and --compare value")
    payload = (F.col("value").cast("string") if request.value_format == "string"
               else F.xxhash64(F.col("value")))
    no_reason = F.lit(None).cast("string")
    frame = raw.select("*", payload.alias("value_payload"), no_reason.alias(UNDECODABLE))
    value = F.col("value_payload")
    return _Decoded(frame=frame, tombstone=F.col("value").isNull(),
                    values={c: value for c in request.compare},
                    key_texts={k: value for k in keys if k != KAFKA_KEY},
                    key_unread=F.lit(False), raw_text=no_reason)


def _decode_json(raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> _Decoded:
    """A JSON value's key and compared fields, as decode_topic describes."""
    from pyspark.sql import functions as F

    key_names = request.value_key_fields()
    fields = request.value_fields()
    problem, by_message_key, shown = None, None, F.col("_text")
    if request.envelope == "debezium":
        # The row each change event leaves (a delete's before, for its key) as the text.
        raw = debezium_texts(raw)
        problem, by_message_key = F.col(ENVELOPE_PROBLEM), F.col("_value").isNull()
        shown = F.col("_value")
    elif request.envelope == "connect":
        raw = connect_texts(raw)
    else:
        # The value as text once, the bytes dropped: every later use reads the text where
        # it lies, where each use of the bytes would copy them.
        raw = raw.select("partition", "offset", "timestamp", "key", KEY_PROBLEM,
                         F.col("value").isNull().alias("_tombstone"),
                         F.col("value").cast("string").alias("_text"))
    tombstone, text = F.col("_tombstone"), F.col("_text")
    # Two decoders, one read. The fast one parses numbers straight to DOUBLE (what
    # _convert makes of their text anyway): about a quarter of the decoding time of
    # parsing text and converting it. Where it cannot give the exact same values
    # (the value is not a JSON object, or a number field holds something else, which
    # marks the record corrupt), the text decoder reads that record, lazily: only
    # those records pay for it, and every record gets the text decoder's values.
    doubles, longs = _fast_types(fields, key_names, targets)
    frame = _parse_json(raw, text, fields, doubles, longs)
    slow = F.col("v").isNull() | F.col(f"v.{_CORRUPT}").isNotNull()
    fast = {name: _field_column(name) for name in fields}
    texts = {name: _field_column(name, "vt") for name in fields}
    values = {name: F.when(slow, _convert(texts[name], targets[name])).otherwise(
        fast[name] if name in doubles else _convert(fast[name], targets[name]))
        for name in fields}
    reason = _undecodable_reason(fields, slow, fast, texts, values, doubles | longs)
    if problem is not None:  # never a tombstone: a delete names its op
        reason = F.coalesce(problem, reason)
    frame = frame.withColumn(UNDECODABLE, F.when(~tombstone, reason))
    # The text decoder writes a JSON integer as its value's digits (-0 as 0), as the
    # BIGINT prints: both decoders give a key the same text.
    key_texts = {name: F.when(slow, texts[name]).otherwise(
        fast[name].cast("string") if name in longs else fast[name]) for name in key_names}
    return _Decoded(frame=frame, tombstone=tombstone, values=values, key_texts=key_texts,
                    key_unread=F.col(UNDECODABLE).isin("", *key_names, *(
                        ["op"] if problem is not None else [])),
                    raw_text=F.when(F.col(UNDECODABLE).isNotNull(),
                                    F.substring(shown, 1, RAW_SAMPLE_CHARS)),
                    by_message_key=by_message_key)


def _fast_types(fields: list[str], key_names: list[str],
                targets: dict[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The fields the fast decoder parses to DOUBLE and to BIGINT (it reads the rest as
    text, as the text decoder does)."""
    from pyspark.sql.types import IntegralType, NumericType

    doubles = frozenset(n for n in fields if n not in key_names
                        and isinstance(targets[n], NumericType))
    # Key fields the sink holds as integers are parsed to BIGINT alike: read as text,
    # every JSON number is written out again through a JSON generator of its own.
    longs = frozenset(n for n in key_names if isinstance(targets[n], IntegralType))
    return doubles, longs


def _parse_json(raw: Any, text: Any, fields: list[str], doubles: frozenset[str],
                longs: frozenset[str]) -> Any:
    """``raw`` with the fast decoder's struct as ``v`` and, only where that one marks the
    record corrupt or has nothing, the text decoder's as ``vt``."""
    from pyspark.sql import functions as F

    options = {"columnNameOfCorruptRecord": _CORRUPT, "mode": "PERMISSIVE"}
    # Both decoders in one projection (from_json keeps it out of Spark's generated
    # pipeline: each projection of its own copies every row once more); the fast
    # decoder's expression is named twice there and evaluated once.
    decoded = F.from_json(text, _text_schema(fields, doubles, longs), options)
    return raw.select("*", decoded.alias("v"), F.when(
        decoded.isNull() | decoded.getField(_CORRUPT).isNotNull(),
        F.from_json(text, _text_schema(fields), options)).alias("vt"))


def _undecodable_reason(fields: list[str], slow: Any, fast: dict[str, Any],
                        texts: dict[str, Any], values: dict[str, Any],
                        fast_typed: frozenset[str]) -> Any:
    """The field a record's value could not give ("" for the whole value), or null.

    ``slow`` is true where the text decoder read the record; ``fast_typed`` are the fields
    the fast decoder parses to a number itself (any other kind marks the record corrupt)."""
    from pyspark.sql import functions as F

    corrupt = F.col("vt").isNull() | F.col(f"vt.{_CORRUPT}").isNotNull()
    all_null = F.lit(True)
    for name in fields:
        all_null = all_null & texts[name].isNull()
    # The whole value first (not JSON, not an object, nothing wanted could be read);
    # then a field the JSON could not give (a nested field under a non-object); then a
    # field whose text does not convert to its type. A record the fast decoder read
    # can only have the last kind, in a field it read as text.
    reasons = [F.when(corrupt & all_null, F.lit(""))]
    reasons += [F.when(corrupt & texts[n].isNull(), F.lit(n)) for n in fields]
    reasons += [F.when(texts[n].isNotNull() & values[n].isNull(), F.lit(n))
                for n in fields]
    fast_reasons = [F.when(fast[n].isNotNull() & values[n].isNull(), F.lit(n))
                    for n in fields if n not in fast_typed]
    return F.when(slow, F.coalesce(*reasons)).otherwise(
        F.coalesce(*fast_reasons) if fast_reasons else F.lit(None).cast("string"))


def _field_column(name: str, struct: str = "v") -> Any:
    from pyspark.sql import functions as F

    return F.col(struct + "." + ".".join(f"`{part}`" for part in name.split(".")))


def _text_schema(fields: list[str], doubles: frozenset[str] = frozenset(),
                 longs: frozenset[str] = frozenset()) -> Any:
    """A from_json schema with every wanted field as text (nested ones as structs): Spark
    then hands over any JSON value as its text (a number as its digits, an object as its
    JSON), so no value is turned into null for having another type than expected.

    Fields in ``doubles`` are read as DOUBLE and those in ``longs`` as BIGINT instead (the
    fast schema, see _decode_json): a value of another kind then marks the record corrupt
    rather than becoming null."""
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    tree: dict[str, Any] = {}
    for name in fields:
        node = tree
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # a.b and a both wanted: a is read as text
                break
        else:
            node.setdefault(parts[-1], name)

    def leaf(name: Any) -> Any:
        return (DoubleType() if name in doubles else LongType() if name in longs
                else StringType())

    def struct(node: dict[str, Any]) -> Any:
        return StructType([StructField(k, struct(v) if isinstance(v, dict) else leaf(v))
                           for k, v in node.items()])

    schema = struct(tree)
    return StructType([*schema.fields, StructField(_CORRUPT, StringType())])


def _convert(text: Any, target: Any) -> Any:
    """A field's text as the type it is compared as: null only where the text was null
    or does not convert (which decode_topic reports as undecodable)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BooleanType,
        DateType,
        NumericType,
        TimestampNTZType,
        TimestampType,
    )

    if isinstance(target, NumericType):
        # Numbers are compared as double (align_types): 10, 10.0 and 1e1 all read alike.
        return text.try_cast("double")
    if isinstance(target, BooleanType):
        return text.try_cast("boolean")
    if isinstance(target, TimestampType | TimestampNTZType | DateType):
        # ISO text, or a number of seconds since the epoch.
        return F.coalesce(text.try_cast("timestamp"),
                          F.timestamp_seconds(text.try_cast("double")))
    return text
