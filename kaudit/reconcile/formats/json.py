"""JSON values (``--value-format json``), bare or in an envelope: their fields read as text
and converted to the types they are compared as, so a field present in a record is never
read as null; a record that cannot be decoded is kept, marked :data:`UNDECODABLE`, with the
start of its raw text.

Each field's type is the one ``--schema`` declares, else the sink column's
(:meth:`JsonFormat.field_types`); the fields are looked for in a sample of the topic before
Spark starts (:meth:`JsonFormat.check_sampled_fields`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.classes import KEY_PROBLEM, UNDECODABLE
from kaudit.reconcile.declared import Encoding, parse_declaration
from kaudit.reconcile.encodings import decoded
from kaudit.reconcile.envelope import (
    ENVELOPE_PROBLEM,
    check_events,
    connect_rows,
    connect_texts,
    debezium_texts,
    wrapper_schema,
)
from kaudit.reconcile.formats.base import Decoded, ValueFormat
from kaudit.reconcile.hints import field_values
from kaudit.reconcile.infer import field_paths, not_objects
from kaudit.reconcile.kinds import Kind, json_number_type, kind_of
from kaudit.reconcile.semantic import semantic_fields, unread_fields

if TYPE_CHECKING:
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.reconcile.request import ReconcileRequest
    from kaudit.reconcile.source import OffsetRange

#: How much of an undecodable value the samples show.
RAW_SAMPLE_CHARS = 200
#: Records read from each end of each partition to check that the named fields exist.
SAMPLE_PER_END = 300
_CORRUPT = "_kaudit_corrupt"
_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"
"""A number's text, as a field read as a time takes it: seconds since the epoch."""


class JsonFormat(ValueFormat):
    """``--value-format json``: fields read by name (dotted for nested ones), typed by
    ``--schema`` or the sink."""

    name = "json"
    envelopes = frozenset({"none", "debezium", "connect"})

    def check_sampled_fields(self, conn: ConnectionSettings, request: ReconcileRequest,
                             ranges: list[OffsetRange]) -> ReconcileRequest:
        return _check_fields_exist(conn, request, ranges)

    def field_types(self, request: ReconcileRequest, sink: Any) -> dict[str, Any]:
        return _field_types(request, sink)

    def decode(self, raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Decoded:
        return _decode_json(raw, request, targets)


JSON = JsonFormat()


def _field_types(request: ReconcileRequest, sink: Any) -> dict[str, Any]:
    """The type each key and compared field is read as: the one ``--schema`` names, else
    the sink column's."""
    from pyspark.sql.types import StringType

    fields = request.value_fields()
    declared = _schema_types(parse_declaration(request.schema).ddl) if request.schema else {}
    by_value = _schema_types(parse_declaration(request.value_types).ddl) \
        if request.value_types else {}
    sink_types = {f.name: f.dataType for f in sink.schema.fields}
    types = {}
    for name in fields:
        if request.schema and name not in declared:
            raise InputError(f"--schema has no field {name!r} "
                             f"(fields: {', '.join(sorted(declared)) or 'none'})")
        types[name] = declared.get(name, by_value.get(name, sink_types.get(
            request.sink_column(name), StringType())))
    return types


def _encodings(request: ReconcileRequest) -> dict[str, Encoding]:
    """How each field that is not written as its type's own text is: as ``--schema`` says,
    else as the values' own schema does."""
    by_value = parse_declaration(request.value_types).encodings if request.value_types else {}
    if not request.schema:
        return by_value
    declared = parse_declaration(request.schema)
    return {n: e for n, e in by_value.items() if n not in declared.names} | declared.encodings


def with_value_types(request: ReconcileRequest,
                     texts: list[str] | list[bytes] | list[str | None]) -> ReconcileRequest:
    """``request`` with what the first sampled value in Connect's ``{"schema", "payload"}``
    wrapper says of the wanted fields' types (:mod:`kaudit.reconcile.semantic`), for the
    fields ``--schema`` leaves out."""
    from dataclasses import replace

    if request.envelope == "none":
        return request  # a wrapped value is read with --envelope connect or debezium
    schema = wrapper_schema(texts)
    if schema is None:
        return request
    declared = parse_declaration(request.schema).names if request.schema else ()
    wanted = [n for n in request.value_fields() if n not in declared]
    found = semantic_fields(schema, request.envelope)
    items = [f"`{n}` {found[n].ddl} {found[n].encoding or ''}".rstrip()
             for n in wanted if n in found]
    unread = unread_fields(schema, request.envelope)
    notes = {n: unread[n] for n in wanted if n in unread}
    if not (items or notes):
        return request
    return replace(request, value_types=", ".join(items) or request.value_types,
                   type_notes=request.type_notes | notes)


def _schema_types(ddl: str) -> dict[str, Any]:
    from pyspark.sql.types import StructType

    from kaudit.reconcile.spark import error_line  # not at the top: the CLI's start-up

    try:
        schema = StructType.fromDDL(ddl)
    except Exception as exc:
        raise InputError(f"--schema: not a valid DDL schema: {error_line(exc, 200)}") from None
    out: dict[str, Any] = {}

    def walk(struct: Any, prefix: str) -> None:
        for f in struct.fields:
            out[prefix + f.name] = f.dataType
            if isinstance(f.dataType, StructType):
                walk(f.dataType, prefix + f.name + ".")

    walk(schema, "")
    return out


def _check_fields_exist(conn: ConnectionSettings, request: ReconcileRequest,
                       ranges: list[OffsetRange]) -> ReconcileRequest:
    """A key or compared field that no sampled value has is a usage error (a typo, a field
    that needs --map), found before Spark starts. The sample is the first and the last
    records of each partition, so a field added to a topic later is still seen. Returns
    the request with what the values' own schema says of their types
    (:func:`with_value_types`)."""
    from dataclasses import replace

    from kaudit.reconcile.source import sample_values  # not at the top: the CLI's start-up

    wanted = request.value_fields()
    declared = parse_declaration(request.schema).names if request.schema else ()
    if not set(wanted) - set(declared) or (request.schema and request.envelope == "none"):
        return request  # nothing to look for, nor any type to learn
    texts = sample_values(conn, request.topic, ranges, SAMPLE_PER_END, request.read_committed)
    if not texts:
        return request  # an empty range, or a sample not read in time: nothing to judge
    request = with_value_types(request, texts)
    if request.schema:
        return request  # the declaration names the fields: nothing to look for
    # A Debezium topic's fields are those of the rows its events leave.
    rows: list[str] | list[bytes] = texts
    if request.envelope == "debezium":
        rows = check_events(request.topic, texts)
    elif request.envelope == "connect":
        rows = connect_rows(texts)
    known = field_paths(rows)
    request = replace(request, sampled=field_values(rows, wanted))
    hint = None if known else not_objects(rows)
    for name in wanted:
        if name not in known:
            sampled = (f"topic {request.topic} values have no field {name!r} in the "
                       f"{len(texts)} records sampled from each partition's start and end")
            if hint:
                raise InputError(f"{sampled} (none of them is a JSON object: {hint})")
            raise InputError(f"{sampled} (fields: {', '.join(sorted(known)) or 'none'}); if "
                             "it appears elsewhere, name its type with --schema")
    return request


def _decode_json(raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Decoded:
    """A JSON value's key and compared fields, as decode_topic describes."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

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
    # Two decoders, one read. The fast one parses numbers straight to the type _convert
    # makes of their text (a double, or an exact decimal): about a quarter of the
    # decoding time of parsing text and converting it. Where it cannot give the exact
    # same values (the value is not a JSON object, or a number field holds something
    # else, which marks the record corrupt), the text decoder reads that record, lazily:
    # only those records pay for it, and every record gets the text decoder's values.
    encodings = _encodings(request)
    numbers, longs = _fast_types([f for f in fields if f not in encodings], key_names, targets)
    frame = _parse_json(raw, text, fields, numbers, longs)
    slow = F.col("v").isNull() | F.col(f"v.{_CORRUPT}").isNotNull()
    fast = {name: _field_column(name) for name in fields}
    texts = {name: _field_column(name, "vt") for name in fields}

    def converted(name: str) -> Any:
        target, encoding = targets[name], encodings.get(name)
        if name in numbers or name in longs:  # the fast decoder typed it: no text of its own
            own = fast[name] if name in numbers else _convert(fast[name], target, encoding)
            return F.when(slow, _convert(texts[name], target, encoding)).otherwise(own)
        # Text from either decoder, converted once: inside a CASE branch Spark would
        # evaluate each repeated part of the conversion (a time's cast) again.
        return _convert(F.when(slow, texts[name]).otherwise(fast[name]), target, encoding)

    # Each value a column of its own before the reason reads it: an expression named in
    # both would be converted twice a record (Spark shares no expression between CASE
    # branches): a time's text took a quarter longer that way.
    frame = frame.select("*", *[converted(n).alias(f"_kaudit_value{i}")
                                for i, n in enumerate(fields)])
    values = {name: F.col(f"_kaudit_value{i}") for i, name in enumerate(fields)}
    # A field read as text and compared as text cannot fail to convert: no check of it.
    as_text = frozenset(n for n in fields if n not in encodings and n not in numbers
                        and n not in longs and isinstance(targets[n], StringType))
    reason = _undecodable_reason(fields, slow, fast, texts, values,
                                 frozenset(numbers) | longs, as_text)
    if problem is not None:  # never a tombstone: a delete names its op
        reason = F.coalesce(problem, reason)
    frame = frame.withColumn(UNDECODABLE, F.when(~tombstone, reason))
    # The text decoder writes a JSON integer as its value's digits (-0 as 0), as the
    # BIGINT prints: both decoders give a key the same text.
    key_texts = {name: F.when(slow, texts[name]).otherwise(
        fast[name].cast("string") if name in longs else fast[name]) for name in key_names}
    return Decoded(frame=frame, tombstone=tombstone, values=values, key_texts=key_texts,
                    key_unread=F.col(UNDECODABLE).isin("", *key_names, *(
                        ["op"] if problem is not None else [])),
                    raw_text=F.when(F.col(UNDECODABLE).isNotNull(),
                                    F.substring(shown, 1, RAW_SAMPLE_CHARS)),
                    by_message_key=by_message_key)


def _fast_types(fields: list[str], key_names: list[str],
                targets: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The number fields the fast decoder parses to their type (:func:`_number_type`),
    and the key fields it parses to BIGINT (it reads the rest as text, as the text decoder
    does)."""
    from pyspark.sql.types import IntegralType, NumericType

    numbers = {n: _number_type(targets[n]) for n in fields if n not in key_names
               and isinstance(targets[n], NumericType)}
    # Key fields the sink holds as integers are parsed to BIGINT alike: read as text,
    # every JSON number is written out again through a JSON generator of its own.
    longs = frozenset(n for n in key_names if isinstance(targets[n], IntegralType))
    return numbers, longs


def _number_type(target: Any) -> Any:
    """What a JSON number compared with a ``target`` column is read as: a double for a
    float column, else an exact decimal (:func:`kaudit.reconcile.kinds.json_number_type`),
    never a 64-bit integer through a double."""
    from pyspark.sql.types import DecimalType, DoubleType

    read_as = json_number_type(kind_of(target.simpleString()))
    return DecimalType(read_as.precision, read_as.scale) if read_as.kind is Kind.DECIMAL \
        else DoubleType()


def _parse_json(raw: Any, text: Any, fields: list[str], numbers: dict[str, Any],
                longs: frozenset[str]) -> Any:
    """``raw`` with the fast decoder's struct as ``v`` and, only where that one marks the
    record corrupt or has nothing, the text decoder's as ``vt``."""
    from pyspark.sql import functions as F

    options = {"columnNameOfCorruptRecord": _CORRUPT, "mode": "PERMISSIVE"}
    # Both decoders in one projection (from_json keeps it out of Spark's generated
    # pipeline: each projection of its own copies every row once more); the fast
    # decoder's expression is named twice there and evaluated once.
    decoded = F.from_json(text, _text_schema(fields, numbers, longs), options)
    return raw.select("*", decoded.alias("v"), F.when(
        decoded.isNull() | decoded.getField(_CORRUPT).isNotNull(),
        F.from_json(text, _text_schema(fields), options)).alias("vt"))


def _undecodable_reason(fields: list[str], slow: Any, fast: dict[str, Any],
                        texts: dict[str, Any], values: dict[str, Any],
                        fast_typed: frozenset[str], as_text: frozenset[str]) -> Any:
    """The field a record's value could not give ("" for the whole value), or null.

    ``slow`` is true where the text decoder read the record; ``fast_typed`` are the fields
    the fast decoder parses to a number itself (any other kind marks the record corrupt);
    ``as_text`` the fields whose value is their text (it cannot fail to convert). Checking
    those anyway made a record of fourteen text fields take twice as long to decode."""
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
                for n in fields if n not in as_text]
    fast_reasons = [F.when(fast[n].isNotNull() & values[n].isNull(), F.lit(n))
                    for n in fields if n not in fast_typed and n not in as_text]
    return F.when(slow, F.coalesce(*reasons)).otherwise(
        F.coalesce(*fast_reasons) if fast_reasons else F.lit(None).cast("string"))


def _field_column(name: str, struct: str = "v") -> Any:
    from pyspark.sql import functions as F

    return F.col(struct + "." + ".".join(f"`{part}`" for part in name.split(".")))


def _text_schema(fields: list[str], numbers: dict[str, Any] | None = None,
                 longs: frozenset[str] = frozenset()) -> Any:
    """A from_json schema with every wanted field as text (nested ones as structs): Spark
    then hands over any JSON value as its text (a number as its digits, an object as its
    JSON), so no value is turned into null for having another type than expected.

    Fields in ``numbers`` are read as the type it gives them and those in ``longs`` as
    BIGINT instead (the fast schema, see _decode_json): a value of another kind then marks
    the record corrupt rather than becoming null."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    numbers = numbers or {}

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
        return numbers.get(name) or (LongType() if name in longs else StringType())

    def struct(node: dict[str, Any]) -> Any:
        return StructType([StructField(k, struct(v) if isinstance(v, dict) else leaf(v))
                           for k, v in node.items()])

    schema = struct(tree)
    return StructType([*schema.fields, StructField(_CORRUPT, StringType())])


def _convert(text: Any, target: Any, encoding: Encoding | None = None) -> Any:
    """A field's text as the type it is compared as, read as ``--schema`` says it is
    written (:func:`kaudit.reconcile.encodings.decoded`): null only where the text was
    null or does not convert (which decode_topic reports as undecodable)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (
        BooleanType,
        DateType,
        NumericType,
        TimestampNTZType,
        TimestampType,
    )

    if encoding is not None:
        return decoded(text, target, encoding)
    if isinstance(target, NumericType):
        # Exactly, or as a double for a float column: 10, 10.0 and 1e1 all read alike.
        return text.try_cast(_number_type(target))
    if isinstance(target, BooleanType):
        return text.try_cast("boolean")
    if isinstance(target, TimestampType | TimestampNTZType | DateType):
        # ISO text, or a number of seconds since the epoch (its digits, not a double's).
        # A number is never read as text: Spark would take "86400" for the year 86400.
        # Of the numbers, only a sign and digits cast as a time at all, to the start of
        # that year: so the pattern is only tried where the cast gave nothing or a year's
        # start (tried on every record, it made reading a time a fifth slower).
        cast = text.try_cast("timestamp")
        instant = F.when(cast.isNotNull() & (F.date_trunc("year", cast) != cast), cast) \
            .when(text.rlike(_NUMBER), F.timestamp_seconds(text.try_cast("decimal(38,9)"))) \
            .otherwise(cast)
        if not isinstance(target, DateType):
            return instant
        # A date is compared as one: a date's text, or an instant at midnight (UTC, the
        # session's zone). Any other time of day is no date: undecodable, not cut off.
        return F.when(text.rlike(r"^\s*-?\d{4,}-\d{2}-\d{2}\s*$"), text.try_cast("date")) \
            .when(F.date_trunc("day", instant) == instant, instant.cast("date"))
    return text
