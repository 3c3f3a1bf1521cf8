"""Find Java and the Kafka jars: a Maven-resolved cache or an existing installation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kaudit.errors import InputError
from kaudit.jvm import find_java, resolve_jars

DEFAULT_KAFKA_VERSION = "4.3.1"
"""Newest Apache Kafka release fully published on Maven Central (4.4.0 lacks kafka-tools)."""

# Kafka's POM does not bring an SLF4J binding; without one the brokers log nothing.
_LOG4J_VERSION = "2.25.4"
_SLF4J_VERSION = "2.0.17"


@dataclass(frozen=True)
class KafkaRuntime:
    """How to launch Kafka's JVM classes."""

    java: str
    classpath: str
    kafka_version: str


def logging_artifacts() -> list[tuple[str, str, str]]:
    """An SLF4J binding to log4j2: Kafka's POMs bring none, and without one a JVM of the
    lab logs nothing."""
    return [("org.slf4j", "slf4j-api", _SLF4J_VERSION),
            ("org.apache.logging.log4j", "log4j-api", _LOG4J_VERSION),
            ("org.apache.logging.log4j", "log4j-core", _LOG4J_VERSION),
            ("org.apache.logging.log4j", "log4j-slf4j2-impl", _LOG4J_VERSION)]


def resolve_kafka_jars(version: str, *, progress: bool = False) -> Path:
    """Resolve Kafka ``version`` (and kafka-tools) with ``mvn`` into the jar cache."""
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:[-.][\w.]+)?", version):
        raise InputError(f"--kafka-version {version!r} is not a release version like 4.3.1")
    return resolve_jars(
        f"kafka/{version}",
        [("org.apache.kafka", "kafka_2.13", version),
         ("org.apache.kafka", "kafka-tools", version),
         *logging_artifacts()],
        what=f"Kafka {version}", marker="kafka_2.13-*.jar", progress=progress)


def kafka_runtime(
    kafka_version: str | None, kafka_home: str | None, *, progress: bool = False
) -> KafkaRuntime:
    """Java plus a classpath for Kafka, from ``--kafka-home`` or the Maven cache."""
    java = find_java()
    if kafka_home:
        libs = Path(kafka_home).expanduser() / "libs"
        jars = sorted(libs.glob("kafka_2.13-*.jar"))
        core = [j for j in jars if re.fullmatch(r"kafka_2\.13-[\d.]+\.jar", j.name)]
        if not core:
            raise InputError(f"--kafka-home {kafka_home}: no libs/kafka_2.13-*.jar there")
        version = core[0].name[len("kafka_2.13-") : -len(".jar")]
        return KafkaRuntime(java=java, classpath=f"{libs.resolve()}/*", kafka_version=version)
    version = kafka_version or DEFAULT_KAFKA_VERSION
    libs = resolve_kafka_jars(version, progress=progress)
    return KafkaRuntime(java=java, classpath=f"{libs.resolve()}/*", kafka_version=version)
