"""The topic side: pin an offset range per partition, then read it with Spark.

The range [start, end) of every partition is fixed before Spark reads
anything, recorded in the report, and can be given back with --from/--to
to repeat a run. With read_committed (the default) the end is the last
stable offset, so open transactions are left out rather than half-read.
A start below the log start offset (records removed by retention) is
reported as unverifiable: those records cannot be compared, which is not
the same as missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kaudit.cluster.client import AdminSession
from kaudit.connect.redact import register_secret
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import InputError


@dataclass(frozen=True)
class OffsetRange:
    """What is read from one partition."""

    partition: int
    start: int
    end: int
    log_start: int
    """The partition's earliest offset when the range was pinned."""
    requested_start: int

    @property
    def unverifiable(self) -> int:
        """Offsets asked for that retention has already removed."""
        return max(0, min(self.log_start, self.end) - self.requested_start)


def _parse_offsets_json(text: str, topic: str, option: str) -> dict[int, int]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{option}: not valid JSON ({exc.msg}); expected e.g. "
                         '{"0": 42, "1": 17}') from None
    if isinstance(raw, dict) and topic in raw and isinstance(raw[topic], dict):
        raw = raw[topic]  # Spark's {"topic": {"0": 42}} form
    if not isinstance(raw, dict) or not raw:
        raise InputError(f'{option}: expected an object of partition -> offset, e.g. {{"0": 42}}')
    out = {}
    for key, value in raw.items():
        if not str(key).isdigit() or isinstance(value, bool) or not isinstance(value, int) \
                or value < 0:
            raise InputError(f"{option}: partition {key!r} -> {value!r} is not "
                             "a partition number and a non-negative offset")
        out[int(key)] = value
    return out


def _parse_timestamp(text: str) -> int | None:
    """Epoch milliseconds from ``1700000000000`` or an ISO-8601 time; None if neither."""
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        raise InputError(f"timestamp {text!r} needs a time zone (e.g. 2026-11-21T10:00:00Z)")
    return int(moment.timestamp() * 1000)


def pin_offsets(conn: ConnectionSettings, topic: str, start_spec: str, end_spec: str,
                read_committed: bool) -> list[OffsetRange]:
    """Resolve --from/--to into a fixed [start, end) per partition."""
    from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    from kaudit.probe.topic import topic_partitions

    session = AdminSession(conn)
    partitions = topic_partitions(session, topic)
    if partitions is None:
        raise InputError(f"topic {topic} does not exist")
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED

    def list_offsets(spec: Any) -> dict[int, int]:
        request = {TopicPartition(topic, p): spec for p in partitions}
        futures = session.admin.list_offsets(request, isolation_level=isolation,
                                             request_timeout=conn.timeout)
        out = {}
        for tp, fut in futures.items():
            try:
                out[tp.partition] = int(session.wait(fut).offset)
            except KafkaException as exc:
                raise session.unreachable(exc) from None
        return out

    earliest = list_offsets(OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = list_offsets(OffsetSpec.latest())  # type: ignore[no-untyped-call]

    def resolve(spec: str, option: str, default: dict[int, int]) -> dict[int, int]:
        if spec in ("earliest", "latest"):
            return dict(earliest if spec == "earliest" else latest)
        if spec.lstrip().startswith("{"):
            given = _parse_offsets_json(spec, topic, option)
            unknown = sorted(set(given) - set(partitions))
            if unknown:
                raise InputError(f"{option}: {topic} has no partition {unknown[0]} "
                                 f"(partitions: {', '.join(map(str, partitions))})")
            return {p: given.get(p, default[p]) for p in partitions}
        millis = _parse_timestamp(spec)
        if millis is None:
            raise InputError(f"{option} {spec!r}: expected earliest/latest, a timestamp "
                             '(ISO-8601 or epoch ms) or offsets JSON like {"0": 42}')
        found = list_offsets(OffsetSpec.for_timestamp(millis))
        # No record at or after the time: the range ends (or starts) at the end.
        return {p: (found[p] if found[p] >= 0 else latest[p]) for p in partitions}

    starts = resolve(start_spec, "--from", earliest)
    ends = resolve(end_spec, "--to", latest)
    ranges = []
    for p in partitions:
        if starts[p] > ends[p]:
            raise InputError(f"partition {p}: --from offset {starts[p]} is after --to offset "
                             f"{ends[p]}")
        ranges.append(OffsetRange(partition=p, start=max(starts[p], earliest[p]),
                                  end=min(ends[p], latest[p]), log_start=earliest[p],
                                  requested_start=starts[p]))
    return ranges


_OAUTH_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"


def _jaas_value(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_options(conn: ConnectionSettings) -> dict[str, str]:
    """librdkafka settings as the Java client (Spark's Kafka source) spells them."""
    props = conn.properties
    out: dict[str, str] = {"bootstrap.servers": conn.bootstrap_servers}
    for key in ("security.protocol", "ssl.endpoint.identification.algorithm",
                "client.id", "request.timeout.ms", "ssl.key.password",
                "sasl.oauthbearer.token.endpoint.url"):
        if key in props:
            value = props[key]
            out[key] = "" if key.startswith("ssl.endpoint") and value == "none" else value
    mechanism = (props.get("sasl.mechanism") or props.get("sasl.mechanisms") or "").upper()
    if mechanism:
        out["sasl.mechanism"] = mechanism
    if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and "sasl.username" in props:
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule"
                  if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        out["sasl.jaas.config"] = (
            f"{module} required username={_jaas_value(props['sasl.username'])} "
            f"password={_jaas_value(props.get('sasl.password', ''))};")
    elif mechanism == "OAUTHBEARER":
        # OIDC client credentials: the Java client fetches tokens with its own handler.
        options = [f"{java}={_jaas_value(props[rd])}" for rd, java in (
            ("sasl.oauthbearer.client.id", "clientId"),
            ("sasl.oauthbearer.client.secret", "clientSecret"),
            ("sasl.oauthbearer.scope", "scope")) if rd in props]
        for pair in props.get("sasl.oauthbearer.extensions", "").split(","):
            name, sep, value = pair.partition("=")
            if sep:
                options.append(f"extension_{name.strip()}={_jaas_value(value.strip())}")
        out["sasl.jaas.config"] = ("org.apache.kafka.common.security.oauthbearer."
                                   "OAuthBearerLoginModule required "
                                   + " ".join(options) + ";")
        if "sasl.oauthbearer.token.endpoint.url" in props:
            out["sasl.login.callback.handler.class"] = _OAUTH_HANDLER
    if "ssl.ca.location" in props:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = props["ssl.ca.location"]
    cert_file = props.get("ssl.certificate.location")
    key_file = props.get("ssl.key.location")
    if cert_file and key_file:
        out["ssl.keystore.type"] = "PEM"
        if cert_file == key_file:
            out["ssl.keystore.location"] = cert_file
        else:
            # The Java client wants key and chain in one PEM store: pass both inline.
            out["ssl.keystore.key"] = _read_pem(key_file)
            out["ssl.keystore.certificate.chain"] = _read_pem(cert_file)
            register_secret(out["ssl.keystore.key"])
    return out


def _read_pem(path: str) -> str:
    try:
        return Path(path).expanduser().read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc.__class__.__name__}") from None


def read_topic(spark: Any, conn: ConnectionSettings, topic: str, ranges: list[OffsetRange],
               read_committed: bool) -> Any:
    """The raw records of the pinned range: partition, offset, timestamp, key, value."""
    from pyspark.sql import functions as F

    reader = (spark.read.format("kafka")
              .option("subscribe", topic)
              .option("startingOffsets", json.dumps({topic: {str(r.partition): r.start
                                                             for r in ranges}}))
              .option("endingOffsets", json.dumps({topic: {str(r.partition): r.end
                                                           for r in ranges}}))
              # Gaps (compaction, transaction markers) are expected inside a range.
              .option("failOnDataLoss", "false"))
    for key, value in java_client_options(conn).items():
        reader = reader.option(f"kafka.{key}", value)
    reader = reader.option("kafka.isolation.level",
                           "read_committed" if read_committed else "read_uncommitted")
    return reader.load().select(F.col("partition").cast("int").alias("partition"),
                                F.col("offset"), F.col("timestamp"), F.col("key"),
                                F.col("value"))
