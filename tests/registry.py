"""A private Schema Registry for the tests: Apicurio Registry, whose distribution Maven Central
publishes ready to run (``io.apicurio:apicurio-registry-app:VERSION:tar.gz:all``), serving
a Confluent-compatible API at ``/apis/ccompat/v7``. It keeps its schemas in memory, listens
on a free loopback port and is stopped at the end of the session.

Fetched with ``mvn dependency:copy`` (Maven's cache keeps it) and unpacked once into
kaudit's jar cache; 3.0.x is the newest line that runs on Java 17.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaudit.jvm import cache_dir, find_java

VERSION = "3.0.9"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"
READY_WITHIN_S = 120


@dataclass(frozen=True)
class SchemaRegistry:
    """A running registry."""

    port: int

    @property
    def url(self) -> str:
        """The Confluent-compatible API's base URL."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    @property
    def v2_url(self) -> str:
        """Apicurio's own v2 API, which its Kafka Connect converter (2.x) speaks."""
        return f"http://127.0.0.1:{self.port}/apis/registry/v2"

    def register(self, subject: str, schema: Any) -> int:
        """Register an Avro schema under ``subject``; the schema id the registry gives."""
        body = json.dumps({"schema": json.dumps(schema)}).encode()
        request = urllib.request.Request(
            f"{self.url}/subjects/{subject}/versions", data=body, method="POST",
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(json.loads(answer.read())["id"])


def unpacked() -> Path:
    """The registry's directory, fetched and unpacked on first use."""
    home = cache_dir() / f"apicurio-registry-{VERSION}"
    runner = home / f"apicurio-registry-app-{VERSION}-runner.jar"
    if runner.is_file():
        return home
    staging = Path(tempfile.mkdtemp(prefix="kaudit-apicurio-"))
    try:
        subprocess.run(["mvn", "-B", "-q", "dependency:copy", f"-Dartifact={ARTIFACT}",
                        f"-DoutputDirectory={staging}"], check=True, capture_output=True,
                       timeout=900, stdin=subprocess.DEVNULL)
        [archive] = staging.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(staging / "app", filter="tar")
        shutil.rmtree(home, ignore_errors=True)
        home.parent.mkdir(parents=True, exist_ok=True)
        (staging / "app").rename(home)  # in place only once whole
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return home


@contextmanager
def running_registry() -> Iterator[SchemaRegistry]:
    """Start a registry, yield it once it answers, stop it."""
    home = unpacked()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    logs = Path(tempfile.mkdtemp(prefix="kaudit-apicurio-"))
    # C1 alone: it serves a handful of schemas, and C2's warm-up would cost more CPU.
    with (logs / "registry.log").open("wb") as log:
        process = subprocess.Popen(
            [find_java(), "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dquarkus.http.port={port}",
             "-Dquarkus.http.host=127.0.0.1", "-jar",
             str(home / f"apicurio-registry-app-{VERSION}-runner.jar")],
            cwd=home, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    registry = SchemaRegistry(port)
    try:
        _wait_until_it_answers(registry, process, logs / "registry.log")
        yield registry
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)
        shutil.rmtree(logs, ignore_errors=True)


def _wait_until_it_answers(registry: SchemaRegistry, process: subprocess.Popen[bytes],
                           log: Path) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while True:
        try:
            with urllib.request.urlopen(f"{registry.url}/subjects", timeout=5):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the schema registry did not start:\n{tail}") from None
            time.sleep(0.2)
