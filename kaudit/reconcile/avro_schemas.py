"""Avro writer schemas for values in Avro (plain, or in Confluent's wire format): read from
``.avsc`` files and checked before Spark starts, then resolved into the one reader schema
the sink is compared with.

- one FILE: the writer schema of every record (plain Avro has no schema id: one schema;
  Confluent-framed records name one: the file's name when it is ``ID.avsc``, else the one id
  a sample of the topic carries, see :func:`~kaudit.reconcile.formats.avro.pinned_to_sampled_id`);
- a DIRECTORY of ``ID.avsc`` files: Confluent's schema id -> its writer schema;
- the reader schema: the one given (``--reader-schema``), else the writer schema with the
  highest id (the newest a registry gave).

Each writer schema must resolve to the reader schema by Avro's rules (the specification's
"Schema Resolution"): records match by name; a reader field the writer lacks needs a
default; a writer field the reader lacks is skipped; int is promoted to long, float or
double, long to float or double, float to double, string and bytes to each other; a writer
union resolves branch by branch, a reader union takes the first branch that matches. What
does not resolve is an :class:`~kaudit.errors.InputError` naming the file and the field: it
is known before any record is read.

Nothing here decodes a record: Spark does, with spark-avro.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kaudit.errors import InputError
from kaudit.reconcile.registry import Registry, registry, subject_schemas

AVRO_FORMATS = ("avro", "avro-plain")
"""Formats spark-avro decodes: Confluent's wire format, and a bare Avro body."""
PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "enum", "fixed")
PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"},
              "float": {"double"}, "string": {"bytes"}, "bytes": {"string"}}
"""Writer type -> the reader types it is promoted to."""
_ID_FILE = re.compile(r"^(\d+)\.avsc$")


@dataclass(frozen=True)
class SchemaFile:
    """One writer (or reader) schema: where it came from and what it says."""

    source: str
    """Where it was read: its file, or its registry and id (never with credentials)."""
    schema_id: int | None
    """Confluent's schema id (the file's name), None for a single file."""
    schema: Any
    """The schema as parsed JSON, checked to be Avro."""

    def json(self) -> str:
        """The schema as spark-avro takes it."""
        return json.dumps(self.schema, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class AvroSchemas:
    """The writer schemas by id (one, None, for plain Avro) and the reader schema."""

    writers: dict[int | None, SchemaFile]
    reader: SchemaFile
    unknown_id: str = "no %1$d.avsc among the writer schemas"
    """Why a record's schema id has no writer schema (a Java format of the id)."""
    id_from_topic: bool = False
    """One file for Confluent-framed records, not named by its id: it is used as the
    writer schema of the one id the topic's records carry, learned from a sample before
    Spark starts (:func:`~kaudit.reconcile.formats.avro.pinned_to_sampled_id`); until
    then its id is None."""

    @property
    def framed(self) -> bool:
        """Whether the records are in Confluent's wire format, naming their schema id
        (plain Avro's one writer schema has none)."""
        return self.id_from_topic or None not in self.writers


@dataclass(frozen=True)
class SchemaSource:
    """Where writer schemas come from when no file is named: a registry and the subjects
    that hold them (by default the topic's, ``TOPIC-value`` and ``TOPIC-key``: Confluent's
    default naming; under a record-name strategy the subject is the record's name, given
    with ``--value-subject`` / ``--key-subject``)."""

    registry: Registry
    topic: str
    timeout: float
    subjects: tuple[str | None, str | None] = (None, None)
    """The subjects named for the value and the key (None: the topic's)."""

    @classmethod
    def given(cls, url: str | None, topic: str, timeout: float, formats: tuple[str, str],
              subjects: tuple[str | None, str | None] = (None, None)) -> SchemaSource | None:
        """The source ``--schema-registry URL`` names (None without one), for the formats
        of the value and the key (one of them must be Confluent-framed Avro) and the
        subjects named for each."""
        for side, given_format, subject in zip(SIDES, formats, subjects, strict=True):
            if subject is None:
                continue
            if not subject.strip():
                raise InputError(f"--{side}-subject: the subject's name is empty")
            if url is None:
                raise InputError(f"--{side}-subject names a subject of a schema registry: "
                                 "add --schema-registry URL")
            if given_format != "avro":
                raise InputError(f"--{side}-subject is for --{side}-format avro (Confluent's "
                                 "wire format, whose records name their schema ids)")
        if url is None:
            return None
        if "avro" not in formats:
            raise InputError("--schema-registry holds the schemas of Confluent-framed Avro: "
                             "add --value-format avro or --key-format avro")
        return cls(registry(url), topic, timeout, subjects)

    def subject(self, side: str) -> str:
        """The subject that holds the ``side``'s (value or key) writer schemas."""
        named = self.subjects[SIDES.index(side)]
        return named if named is not None else f"{self.topic}-{side}"

    def named(self, side: str) -> bool:
        """Whether the ``side``'s subject was named (``--value-subject``) rather than
        derived from the topic."""
        return self.subjects[SIDES.index(side)] is not None


#: The two sides of a record whose schemas can come from a registry, in SchemaSource's order.
SIDES = ("value", "key")


def key_schemas_for(key_format: str, writers: Path | None,
                    source: SchemaSource | None = None) -> AvroSchemas | None:
    """The schemas ``--key-format`` and ``--key-schema`` (else the registry's) ask for
    (None for a text key); a key is read as its newest writer schema."""
    return given_schemas("key", key_format, writers, None, source)


def given_schemas(side: str, given_format: str, writers: Path | None, reader: Path | None,
                   source: SchemaSource | None) -> AvroSchemas | None:
    """The writer schemas of the ``side`` (value or key) in ``given_format``: from
    ``writers``, else the registry; None for a side not in Avro (where ``writers`` is then
    exit 2); ``reader`` as ``--reader-schema`` names it. Only values are sampled before
    Spark starts: a value's one file need not be named by its id, a key's must."""
    if given_format not in AVRO_FORMATS:
        if writers is not None:
            raise InputError(f"--{side}-schema is for Avro {side}s: add --{side}-format avro "
                             "(Confluent's wire format) or avro-plain")
        return None
    if writers is not None and source is not None and source.named(side):
        raise InputError(f"--{side}-schema and --{side}-subject both name the {side}'s writer "
                         "schemas: give one")
    if writers is None and source is not None and given_format == "avro":
        subject = source.subject(side)
        found = subject_schemas(source.registry, subject, source.timeout)
        return registry_schemas(
            found, f"schema registry {source.registry.base}", subject, reader,
            record_only=side == "value",
            hint="check the subject's name" if source.named(side) else
            f"check the topic's name, or name the subject with --{side}-subject")
    if writers is None:
        raise InputError(f"--{side}-format {given_format} needs the writer schemas: "
                         f"--{side}-schema FILE|DIR (a directory of ID.avsc files)"
                         + (", or --schema-registry URL" if given_format == "avro" else ""))
    return load_schemas(writers, reader, framed=given_format == "avro",
                        record_only=side == "value", id_from_topic=side == "value")


def load_schemas(writers: Path, reader: Path | None = None, *,
                 framed: bool = True, record_only: bool = True,
                 id_from_topic: bool = False) -> AvroSchemas:
    """The writer schemas of ``writers`` and the reader schema, each writer checked to
    resolve to it.

    ``framed`` (Confluent's wire format: each record names its schema id): ``writers`` is a
    directory of ``ID.avsc`` files, or one file named so, or (``id_from_topic``) one file
    of any name, used for the one id the topic carries (:attr:`AvroSchemas.id_from_topic`).
    Plain Avro names no id: one ``.avsc`` file, of any name."""
    if writers.is_dir():
        if not framed:
            raise InputError(f"{writers}: plain Avro records carry no schema id: give the "
                             "one writer schema's .avsc file")
        found: dict[int | None, SchemaFile] = {}
        for path in sorted(writers.iterdir()):
            match = _ID_FILE.match(path.name)
            if match:
                found[int(match.group(1))] = read_schema_file(path, int(match.group(1)))
            elif path.suffix == ".avsc" and not _same_file(path, reader):
                # Left out, its records would only surface later as unknown schema ids.
                raise InputError(f"{path}: a writer schema's file is named by its schema id "
                                 "(ID.avsc, e.g. 1.avsc); keep other schemas out of "
                                 f"{writers}")
        if not found:
            raise InputError(f"{writers}: no schema file named ID.avsc (e.g. 1.avsc) in it")
        by_id = found
    elif writers.is_file():
        match = _ID_FILE.match(writers.name)
        if framed and not match and not id_from_topic:
            raise InputError(f"{writers}: Confluent-framed records name their schema id: name "
                             "the file ID.avsc (e.g. 1.avsc) or give a directory of them")
        schema_id = int(match.group(1)) if framed and match else None
        by_id = {schema_id: read_schema_file(writers, schema_id)}
        if framed and schema_id is None:
            schemas = resolved(by_id, reader, record_only=record_only)
            unknown = (f"{str(writers).replace('%', '%%')} was used for no schema id: no "
                       "record sampled from both ends of each partition named one")
            return replace(schemas, id_from_topic=True, unknown_id=unknown)
    else:
        raise InputError(f"{writers}: no such schema file or directory")
    return resolved(by_id, reader, record_only=record_only)


def _same_file(path: Path, other: Path | None) -> bool:
    """Whether ``other`` (the reader schema, which may sit among the writers) is ``path``."""
    try:
        return other is not None and path.samefile(other)
    except OSError:  # the reader schema's own absence is said where it is read
        return False


def registry_schemas(found: dict[int, Any], source: str, subject: str,
                     reader: Path | None, *, record_only: bool, hint: str) -> AvroSchemas:
    """The writer schemas a registry holds for a subject (schema id -> parsed schema, each
    checked to be Avro), resolved as files are; ``source`` names the registry, ``hint``
    ends the message for a subject the registry does not have."""
    if not found:
        raise InputError(f"{source}: no schema under subject {subject}: name the subject's "
                         f"schemas with files instead, or {hint}")
    by_id: dict[int | None, SchemaFile] = {}
    for schema_id, schema in sorted(found.items()):
        where = f"{source} schema id {schema_id}"
        problem = check_schema(schema, {})
        if problem:
            raise InputError(f"{where}: not an Avro schema: {problem}")
        by_id[schema_id] = SchemaFile(where, schema_id, schema)
    schemas = resolved(by_id, reader, record_only=record_only)
    return AvroSchemas(schemas.writers, schemas.reader,
                       unknown_id=f"not a version of subject {subject} in the registry")


def resolved(by_id: dict[int | None, SchemaFile], reader: Path | None, *,
             record_only: bool) -> AvroSchemas:
    """The writer schemas and the reader schema (the one given, else the writer with the
    highest id), each writer checked to resolve to it."""
    newest = by_id[max(by_id, key=lambda k: -1 if k is None else k)]
    chosen = read_schema_file(reader, None) if reader is not None else newest
    for writer in by_id.values():
        problem = resolve(writer.schema, chosen.schema)
        if problem:
            raise InputError(f"{writer.source}: does not resolve to the reader schema "
                             f"{chosen.source}: {problem}")
    if record_only and record_fields(chosen.schema) is None:
        raise InputError(f"{chosen.source}: the reader schema is not a record: kaudit "
                         "compares a record's fields")
    return AvroSchemas(by_id, chosen)


def row_field_types(schema: Any, fields: list[str], envelope: str) -> dict[str, Any]:
    """Each of ``fields`` (dotted for a nested one) -> its type in a record schema (a
    nullable field's other branch), read from a Debezium event's ``after`` record under
    ``--envelope debezium``; a field not found is left out."""
    names = _named(schema)

    def inner(kind: Any) -> Any:
        kind = _deref(kind, names)
        if isinstance(kind, list):  # ["null", X]: X; a wider union is no one type
            branches = [b for b in kind if b != "null"]
            kind = _deref(branches[0], names) if len(branches) == 1 else None
        return kind

    def find(record: Any, path: list[str]) -> Any:
        for part in path:
            record = inner(record)
            if not (isinstance(record, dict) and record.get("type") == "record"):
                return None
            record = next((f["type"] for f in record["fields"] if f["name"] == part), None)
            if record is None:
                return None
        return inner(record)

    prefix = ["after"] if envelope == "debezium" else []
    found = {name: find(schema, prefix + name.split(".")) for name in fields}
    return {name: kind for name, kind in found.items() if kind is not None}


def record_fields(schema: Any) -> list[str] | None:
    """A record schema's top-level field names; None for a schema that is not a record."""
    kind = _deref(schema, _named(schema))
    if _type(kind) != "record":
        return None
    return [field["name"] for field in kind["fields"]]


def never_null_fields(schema: Any) -> list[str]:
    """The record schema's top-level fields that a decoded record always has a value in (not
    ``null``, nor a union with it)."""
    names = _named(schema)
    out = []
    for field in _deref(schema, names)["fields"]:
        kind = _deref(field["type"], names)
        if kind != "null" and not (isinstance(kind, list) and "null" in kind):
            out.append(field["name"])
    return out


def field_paths(schema: Any) -> set[str]:
    """The dotted names of a record schema's fields, nested records' too (through a union
    with null, as a nullable record is written)."""
    names = _named(schema)
    paths: set[str] = set()

    def walk(record: Any, prefix: str, depth: int) -> None:
        for field in record["fields"]:
            path = prefix + field["name"]
            paths.add(path)
            kind = _deref(field["type"], names)
            if isinstance(kind, list):  # ["null", {...record}]
                kind = next((_deref(b, names) for b in kind if b != "null"), None)
            if isinstance(kind, dict) and kind.get("type") == "record" and depth < 16:
                walk(kind, path + ".", depth + 1)

    walk(_deref(schema, names), "", 0)
    return paths


def read_schema_file(path: Path, schema_id: int | None) -> SchemaFile:
    """One ``.avsc`` file, parsed and checked to be an Avro schema (file and line named)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it: {exc}") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not an Avro schema: not JSON ({exc.msg})"
                         ) from None
    problem = check_schema(schema, {})
    if problem:
        raise InputError(f"{path}: not an Avro schema: {problem}")
    return SchemaFile(str(path), schema_id, schema)


def check_schema(schema: Any, names: dict[str, Any], where: str = "the schema") -> str | None:
    """Why ``schema`` is not Avro (None when it is); ``names`` collects the named types."""
    if isinstance(schema, str):
        if schema in PRIMITIVES or schema in names:
            return None
        return f"{where}: unknown type {schema!r}"
    if isinstance(schema, list):
        if not schema:
            return f"{where}: an empty union"
        for branch in schema:
            if isinstance(branch, list):
                return f"{where}: a union inside a union"
            if (problem := check_schema(branch, names, where)) is not None:
                return problem
        return None
    if not isinstance(schema, dict) or "type" not in schema:
        return f"{where}: neither a type name, a union nor an object with a \"type\""
    kind = schema["type"]
    if kind in NAMED:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            return f"{where}: a {kind} without a name"
        names[_full_name(schema)] = schema
        names[name] = schema
    if kind == "record":
        return _check_fields(schema, names, where)
    if kind == "enum":
        symbols = schema.get("symbols")
        ok = isinstance(symbols, list) and symbols and all(isinstance(s, str) for s in symbols)
        return None if ok else f"{where}: enum {schema['name']} without symbols"
    if kind == "fixed":
        ok = isinstance(schema.get("size"), int) and schema["size"] >= 0
        return None if ok else f"{where}: fixed {schema['name']} without a size"
    if kind == "array":
        return check_schema(schema.get("items"), names, f"{where} (array items)")
    if kind == "map":
        return check_schema(schema.get("values"), names, f"{where} (map values)")
    return check_schema(kind, names, where)  # {"type": "long", "logicalType": ...}


def _check_fields(schema: dict[str, Any], names: dict[str, Any], where: str) -> str | None:
    fields = schema.get("fields")
    if not isinstance(fields, list):
        return f"{where}: record {schema['name']} without a list of fields"
    seen: set[str] = set()
    for field in fields:
        if not isinstance(field, dict) or not isinstance(field.get("name"), str):
            return f"{where}: record {schema['name']} has a field without a name"
        if field["name"] in seen:
            return f"{where}: record {schema['name']} names field {field['name']} twice"
        seen.add(field["name"])
        inner = f"field {schema['name']}.{field['name']}"
        if "type" not in field:
            return f"{inner} has no type"
        if (problem := check_schema(field["type"], names, inner)) is not None:
            return problem
    return None


def resolve(writer: Any, reader: Any, where: str = "the value") -> str | None:
    """Why data written with ``writer`` cannot be read with ``reader`` (None: it can)."""
    return _resolve(writer, reader, where, _named(writer), _named(reader))


def _resolve(writer: Any, reader: Any, where: str, w_names: dict[str, Any],
             r_names: dict[str, Any]) -> str | None:
    writer, reader = _deref(writer, w_names), _deref(reader, r_names)
    if isinstance(writer, list):  # every branch the writer may have used must resolve
        for branch in writer:
            if (problem := _resolve(branch, reader, where, w_names, r_names)) is not None:
                return problem
        return None
    if isinstance(reader, list):
        if any(_resolve(writer, branch, where, w_names, r_names) is None for branch in reader):
            return None
        return f"{where}: the writer's {_type(writer)} matches no branch of the reader's union"
    w_type, r_type = _type(writer), _type(reader)
    if w_type != r_type:
        if r_type in PROMOTIONS.get(w_type, ()):
            return None
        return f"{where}: written as {w_type}, read as {r_type} (no Avro promotion)"
    if w_type == "record":
        return _resolve_record(writer, reader, where, w_names, r_names)
    if w_type == "enum":
        missing = set(writer["symbols"]) - set(reader["symbols"])
        if missing and "default" not in reader:
            return f"{where}: enum symbols {sorted(missing)} unknown to the reader"
    if w_type == "fixed" and writer.get("size") != reader.get("size"):
        return f"{where}: fixed of size {writer.get('size')} read as size {reader.get('size')}"
    if w_type == "array":
        return _resolve(writer["items"], reader["items"], f"{where}[]", w_names, r_names)
    if w_type == "map":
        return _resolve(writer["values"], reader["values"], f"{where}{{}}", w_names, r_names)
    return None


def _resolve_record(writer: dict[str, Any], reader: dict[str, Any], where: str,
                    w_names: dict[str, Any], r_names: dict[str, Any]) -> str | None:
    if writer["name"] != reader["name"] and writer["name"] not in reader.get("aliases", ()):
        return f"{where}: record {writer['name']} read as record {reader['name']}"
    written = {f["name"]: f for f in writer["fields"]}
    for field in reader["fields"]:
        inner = f"field {field['name']}"
        source = written.get(field["name"]) or next(
            (written[a] for a in field.get("aliases", ()) if a in written), None)
        if source is None:
            if "default" not in field:
                return f"{inner}: the reader has it with no default, the writer lacks it"
            continue
        problem = _resolve(source["type"], field["type"], inner, w_names, r_names)
        if problem is not None:
            return problem
    return None


def _named(schema: Any) -> dict[str, Any]:
    names: dict[str, Any] = {}
    check_schema(schema, names)
    return names


def _deref(schema: Any, names: dict[str, Any]) -> Any:
    """A named type's definition; a type wrapped in an object ({"type": [...]}) unwrapped."""
    while isinstance(schema, dict) and not isinstance(schema["type"], str):
        schema = schema["type"]
    return names.get(schema, schema) if isinstance(schema, str) else schema


def _type(schema: Any) -> str:
    if isinstance(schema, dict):
        kind = schema["type"]
        return kind if isinstance(kind, str) else "union"
    return str(schema)


def _full_name(schema: dict[str, Any]) -> str:
    name, space = schema["name"], schema.get("namespace")
    return f"{space}.{name}" if space and "." not in name else name
