"""Find Java and the Kafka jars: a Maven-resolved cache or an existing installation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kaudit.errors import InputError, RuntimeUnavailable

DEFAULT_KAFKA_VERSION = "4.3.1"
"""Newest Apache Kafka release fully published on Maven Central (4.4.0 lacks kafka-tools)."""

# Kafka's POM does not bring an SLF4J binding; without one the brokers log nothing.
_LOG4J_VERSION = "2.25.4"
_SLF4J_VERSION = "2.0.17"
MAVEN_TIMEOUT_S = 900


@dataclass(frozen=True)
class KafkaRuntime:
    """How to launch Kafka's JVM classes."""

    java: str
    classpath: str
    kafka_version: str


def cache_dir() -> Path:
    """Per-user cache for resolved jars (``KAUDIT_CACHE_DIR`` overrides)."""
    env = os.environ.get("KAUDIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaudit"


def find_java() -> str:
    """The ``java`` to use (``JAVA_HOME`` first), checked to be version 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise RuntimeUnavailable(
            "Java not found: install a Java 17+ runtime "
            "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    try:
        out = subprocess.run(
            [candidate, "-version"], capture_output=True, text=True, timeout=30
        ).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeUnavailable(f"cannot run {candidate}: {exc}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        raise RuntimeUnavailable(f"cannot tell the version of {candidate}")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    if major < 17:
        raise RuntimeUnavailable(f"{candidate} is Java {major}; Kafka 4 needs Java 17 or newer")
    return candidate


def _pom(version: str) -> str:
    deps = [
        ("org.apache.kafka", "kafka_2.13", version),
        ("org.apache.kafka", "kafka-tools", version),
        ("org.slf4j", "slf4j-api", _SLF4J_VERSION),
        ("org.apache.logging.log4j", "log4j-api", _LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-core", _LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-slf4j2-impl", _LOG4J_VERSION),
    ]
    body = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kaudit.lab</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def resolve_kafka_jars(version: str, *, progress: bool = False) -> Path:
    """Resolve Kafka ``version`` and its runtime dependencies with ``mvn``, cached.

    The jars land in a temporary folder renamed into place only when Maven
    succeeds, so a second start needs no network and a failed download
    leaves nothing half-resolved behind.
    """
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:[-.][\w.]+)?", version):
        raise InputError(f"--kafka-version {version!r} is not a release version like 4.3.1")
    root = cache_dir() / "kafka" / version
    libs = root / "libs"
    if any(libs.glob("kafka_2.13-*.jar")):
        return libs
    mvn = shutil.which("mvn")
    if not mvn:
        raise RuntimeUnavailable(
            "Maven (mvn) not found: install it (apt-get install maven) "
            "or pass --kafka-home with an existing Kafka installation"
        )
    root.mkdir(parents=True, exist_ok=True)
    (root / "pom.xml").write_text(_pom(version), encoding="utf-8")
    staging = root / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [
        mvn,
        "-B",
        "-f",
        str(root / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    if not progress:
        cmd.insert(1, "-q")
    try:
        proc = subprocess.run(
            cmd,
            capture_output=not progress,
            text=True,
            timeout=MAVEN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeUnavailable(
            f"mvn did not resolve Kafka {version} within {MAVEN_TIMEOUT_S}s"
        ) from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout or "").splitlines() if "[ERROR]" in ln]
        detail = lines[0].replace("[ERROR]", "").strip() if lines else f"exit {proc.returncode}"
        raise RuntimeUnavailable(f"mvn could not resolve Kafka {version}: {detail[:300]}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    return libs


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
