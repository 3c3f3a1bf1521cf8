"""The sink side: read a table by URI, never write to it.

``jdbc:postgresql://HOST:PORT/DB?table=T`` (any JDBC URL with ``?table=``),
``parquet:PATH``, ``csv:PATH``, ``json:PATH`` (JSON lines), ``delta:PATH``,
``table:DB.T`` (a table in Spark's catalog) and ``iceberg:CATALOG.DB.TABLE``.
``--sink-option KEY=VALUE`` goes to the reader; for JDBC, ``user``,
``password-file`` (a file holding the password) and ``driver``; for Iceberg, the
catalog's properties (``type=hadoop``, ``warehouse=PATH``; ``type=rest``,
``uri=URL``) and ``snapshot-id`` to read an earlier snapshot.

Like the topic's offsets, an Iceberg table is pinned before it is read: its current
snapshot is looked up once (:func:`pin_sink`), read, and recorded in the report. A
PostgreSQL table's column types are looked up then too: Spark reads ``jsonb``, ``uuid`` and
``time`` as text (or a time as a timestamp on 1970-01-01), and kaudit compares them as what
they are (:func:`kaudit.reconcile.kinds.database_kind`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from kaudit.connection.redact import is_secret_key, register_secret
from kaudit.errors import ConnectionFailure, InputError
from kaudit.reconcile.kinds import Kind, database_kind
from kaudit.reconcile.spark import error_line

FORMATS = ("jdbc", "parquet", "csv", "json", "delta", "table", "iceberg")
_EXPECTED = ("expected jdbc:...?table=T, parquet:PATH, csv:PATH, json:PATH, delta:PATH, "
             "table:DB.T or iceberg:CATALOG.DB.TABLE")
_JDBC_DRIVERS = {"postgresql": "org.postgresql.Driver"}


@dataclass(frozen=True)
class SinkSpec:
    """A parsed sink URI plus reader options."""

    kind: str
    location: str
    """Path, JDBC URL (without ?table=) or catalog table name."""
    table: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    snapshot_id: int | None = None
    """The Iceberg snapshot read (given with ``snapshot-id`` or pinned by :func:`pin_sink`)."""
    column_types: dict[str, str] = field(default_factory=dict)
    """A PostgreSQL table's columns -> their types as the database names them
    (``jsonb``, ``time without time zone``), looked up by :func:`pin_sink`."""

    def database_kinds(self) -> dict[str, Any]:
        """Column -> the kind its database type holds where Spark reads it as text."""
        return {c: k for c, t in self.column_types.items()
                if (k := database_kind(t)) is not None}

    def describe(self) -> str:
        """The sink as reports show it (passwords masked by the report's redaction)."""
        if self.kind == "jdbc":
            return f"{self.location}{'&' if '?' in self.location else '?'}table={self.table}"
        return f"{self.kind}:{self.location}"

    @property
    def catalog(self) -> str:
        """An Iceberg sink's catalog: the first part of CATALOG.DB.TABLE."""
        return self.location.split(".", 1)[0]


def parse_sink(uri: str, options: dict[str, str]) -> SinkSpec:
    """Parse a sink URI; an unknown scheme or a JDBC URL without a table is exit 2."""
    if uri.startswith("jdbc:"):
        base, _, query = uri.partition("?")
        params = dict(parse_qsl(query, keep_blank_values=True))
        table = params.pop("table", None)
        if not table:
            raise InputError(f"--sink {uri.split('?')[0]}...: JDBC sinks need ?table=NAME")
        for secret_key in ("password",):
            if secret_key in params:
                register_secret(params[secret_key])
        opts = dict(options)
        if params:
            # Encoded again as they came: a password with "&" or "%" in it arrives
            # percent-encoded, and the driver decodes it. Paths (sslrootcert=/etc/...) stay
            # readable.
            base = base + "?" + urlencode(params, safe="/:", quote_via=quote)
        password_file = opts.pop("password-file", None)
        if password_file:
            try:
                password = Path(password_file).expanduser().read_text().strip()
            except OSError as exc:
                raise InputError(f"--sink-option password-file={password_file}: cannot read "
                                 f"({exc.__class__.__name__})") from None
            register_secret(password)
            opts["password"] = password
        if "password" in opts:
            register_secret(opts["password"])
        vendor = base.split(":")[1] if base.count(":") >= 2 else ""
        if "driver" not in opts and vendor in _JDBC_DRIVERS:
            opts["driver"] = _JDBC_DRIVERS[vendor]
        return SinkSpec("jdbc", base, table, opts)
    kind, sep, location = uri.partition(":")
    if not sep or kind not in FORMATS or not location:
        raise InputError(f"--sink {uri!r}: {_EXPECTED}")
    if kind == "iceberg":
        return _parse_iceberg(uri, location, dict(options))
    if kind in ("parquet", "csv", "json", "delta") and not Path(location).expanduser().exists():
        raise InputError(f"--sink {uri}: {location} does not exist")
    return SinkSpec(kind, location, None, dict(options))


def _parse_iceberg(uri: str, location: str, opts: dict[str, str]) -> SinkSpec:
    parts = location.split(".")
    if len(parts) < 3 or not all(parts):
        raise InputError(f"--sink {uri}: expected iceberg:CATALOG.DB.TABLE")
    for key, value in opts.items():
        # Keys that name a credential (token, s3.secret-access-key, adls.sas-token.ACCOUNT,
        # adls.auth.shared-key.account.key...) and HTTP headers sent to a REST catalog.
        if is_secret_key(key) or key.lower().startswith("header."):
            register_secret(value)
    snapshot = opts.pop("snapshot-id", None)
    if snapshot is not None and not snapshot.isdigit():
        raise InputError(f"--sink-option snapshot-id={snapshot}: expected a snapshot id "
                         "(a number, as the report's sink.snapshot_id gives it)")
    return SinkSpec("iceberg", location, None, opts,
                    int(snapshot) if snapshot is not None else None)


def pin_sink(spark: Any, sink: SinkSpec) -> SinkSpec:
    """The sink with the snapshot this run reads: for Iceberg, the table's current one
    (unless ``snapshot-id`` named one), so that the report can say what was compared and
    a rerun can read the same rows; other sinks have no snapshot to pin. A PostgreSQL
    table's column types are looked up (:func:`_postgres_types`)."""
    if sink.kind == "jdbc":
        return replace(sink, column_types=_postgres_types(spark, sink))
    if sink.kind != "iceberg":
        return sink
    _configure_catalog(spark, sink)
    if sink.snapshot_id is not None:
        return sink
    try:
        # The main branch's head is the table's current snapshot; none on an empty table.
        refs = spark.sql(f"SELECT snapshot_id FROM {quoted(sink.location)}.refs "
                         "WHERE name = 'main'").collect()
    except Exception as exc:
        raise _sink_error(sink, exc) from None
    return replace(sink, snapshot_id=int(refs[0][0])) if refs else sink


def _postgres_types(spark: Any, sink: SinkSpec) -> dict[str, str]:
    """A PostgreSQL table's columns and their types as the database writes them; empty
    for another database, and where the table is not one the catalog names (a subquery):
    those columns are then compared as Spark reads them."""
    if not sink.location.startswith("jdbc:postgresql:") or not sink.table:
        return {}
    # to_regclass resolves the name as the table's own read does: quotes, search_path.
    name = sink.table.replace("'", "''")
    query = ("SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type "
             f"FROM pg_attribute a WHERE a.attrelid = to_regclass('{name}') "
             "AND a.attnum > 0 AND NOT a.attisdropped")
    reader = spark.read.format("jdbc").option("url", sink.location).option("query", query)
    for key, value in sink.options.items():
        reader = reader.option(key, value)
    try:
        return {row["name"]: row["type"] for row in reader.load().collect()}
    except Exception:  # the table's own read names what is wrong
        return {}


def _configure_catalog(spark: Any, sink: SinkSpec) -> None:
    """Declare the Iceberg catalog from --sink-option, unless the session has it already."""
    prefix = f"spark.sql.catalog.{sink.catalog}"
    if not sink.options:
        if spark.conf.get(prefix, None) is None:
            raise InputError(f"--sink {sink.describe()}: the Spark session has no catalog "
                             f"{sink.catalog!r}; describe it with --sink-option (e.g. "
                             "type=hadoop and warehouse=PATH, or type=rest and uri=URL)")
        return
    spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
    for key, value in sink.options.items():
        spark.conf.set(f"{prefix}.{key}", value)


def quoted(name: str) -> str:
    """CATALOG.DB.TABLE as Spark SQL identifiers (a backtick in a name is doubled)."""
    return ".".join("`" + part.replace("`", "``") + "`" for part in name.split("."))


def read_sink(spark: Any, sink: SinkSpec) -> Any:
    """A DataFrame over the sink (read lazily; only ever read)."""
    try:
        if sink.kind == "iceberg":
            table = quoted(sink.location)
            if sink.snapshot_id is None:  # an empty table: no snapshot to pin
                return spark.table(table)
            return spark.sql(f"SELECT * FROM {table} VERSION AS OF {sink.snapshot_id}")
        if sink.kind == "jdbc":
            reader = spark.read.format("jdbc").option("url", sink.location).option(
                "dbtable", sink.table)
            for key, value in sink.options.items():
                reader = reader.option(key, value)
            # Read as their own text what Spark would misread: a time of day (as a timestamp)
            # and a numeric wider than its decimals (rounded to decimal(38,18)).
            texts = [c for c, k in sink.database_kinds().items()
                     if k.kind in (Kind.TIME, Kind.WIDE_DECIMAL)]
            if texts:
                reader = reader.option("customSchema", ", ".join(
                    "`" + c.replace("`", "``") + "` STRING" for c in texts))
            df = reader.load()
            df.schema  # noqa: B018 - resolving the schema is the connection check
            return df
        if sink.kind == "table":
            return spark.table(sink.location)
        reader = spark.read.format(sink.kind)
        defaults = {"csv": {"header": "true", "inferSchema": "true"}}.get(sink.kind, {})
        for key, value in {**defaults, **sink.options}.items():
            reader = reader.option(key, value)
        return reader.load(sink.location)
    except Exception as exc:
        raise _sink_error(sink, exc) from None


def _sink_error(sink: SinkSpec, exc: Exception) -> Exception:
    text, first = str(exc), error_line(exc)
    unreachable = ("Connection refused", "connection attempt failed", "authentication failed",
                   "password authentication", "UnknownHostException", "timed out",
                   "does not exist" if sink.kind == "jdbc" else "\0")
    if sink.kind == "jdbc" and any(s in text for s in unreachable):
        return ConnectionFailure(f"cannot read sink {sink.describe()}: {first}")
    if sink.kind == "iceberg" and "org.apache.iceberg" in text and (
            "ClassNotFound" in text or "CATALOG_PLUGIN_CLASS_NOT_FOUND" in text):
        return InputError("iceberg: this Spark session lacks Iceberg's runtime jar "
                          "(kaudit fetches it when it starts Spark itself; else pass it "
                          "with --jars)")
    if sink.kind == "iceberg" and "TABLE_OR_VIEW_NOT_FOUND" in text:
        return InputError(f"cannot read sink {sink.describe()}: catalog {sink.catalog!r} has "
                          f"no table {sink.location.split('.', 1)[1]}")
    if sink.kind == "delta" and "delta" in text.lower() and "DATA_SOURCE_NOT_FOUND" in text:
        return InputError("delta: sinks need Delta Lake's jars (io.delta:delta-spark_2.13); "
                          "pass them with --jars")
    return InputError(f"cannot read sink {sink.describe()}: {first}")
