"""The sink side: read a table by URI, never write to it.

``jdbc:postgresql://HOST:PORT/DB?table=T`` (any JDBC URL with ``?table=``),
``parquet:PATH``, ``csv:PATH``, ``json:PATH`` (JSON lines), ``delta:PATH`` and
``table:DB.T`` (a table in Spark's catalog). ``--sink-option KEY=VALUE`` goes to
the reader; for JDBC, ``user``, ``password-file`` (a file holding the password)
and ``driver``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from kaudit.connect.redact import register_secret
from kaudit.errors import ConnectionFailure, InputError
from kaudit.reconcile.spark import error_line

FORMATS = ("jdbc", "parquet", "csv", "json", "delta", "table")
_JDBC_DRIVERS = {"postgresql": "org.postgresql.Driver"}


@dataclass(frozen=True)
class SinkSpec:
    """A parsed sink URI plus reader options."""

    kind: str
    location: str
    """Path, JDBC URL (without ?table=) or catalog table name."""
    table: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """The sink as reports show it (passwords masked by the report's redaction)."""
        if self.kind == "jdbc":
            return f"{self.location}?table={self.table}"
        return f"{self.kind}:{self.location}"


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
            base = base + "?" + "&".join(f"{k}={v}" for k, v in params.items())
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
        raise InputError(f"--sink {uri!r}: expected jdbc:...?table=T, parquet:PATH, csv:PATH, "
                         "json:PATH, delta:PATH or table:DB.T")
    if kind in ("parquet", "csv", "json", "delta") and not Path(location).expanduser().exists():
        raise InputError(f"--sink {uri}: {location} does not exist")
    return SinkSpec(kind, location, None, dict(options))


def read_sink(spark: Any, sink: SinkSpec) -> Any:
    """A DataFrame over the sink (read lazily; only ever read)."""
    try:
        if sink.kind == "jdbc":
            reader = spark.read.format("jdbc").option("url", sink.location).option(
                "dbtable", sink.table)
            for key, value in sink.options.items():
                reader = reader.option(key, value)
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
    if sink.kind == "delta" and "delta" in text.lower() and "DATA_SOURCE_NOT_FOUND" in text:
        return InputError("delta: sinks need Delta Lake's jars (io.delta:delta-spark_2.13); "
                          "pass them with --jars")
    return InputError(f"cannot read sink {sink.describe()}: {first}")
