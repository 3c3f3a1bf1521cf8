"""Kafka Connect in the lab: one distributed-mode worker (node id 200) from the lab's Kafka
version, with the connector plugins real pipelines use, fetched with Maven and cached.

The worker is a lab node like a broker: its command line is kept in ``lab.json``, it is
killed and restarted with ``lab kill 200`` / ``lab start 200``, and stopped (first) and
purged with the lab. Its REST API listens on the node's port; it is ready when that API
lists the connectors. Its config, offset and status topics live on the lab's brokers, so a
restarted worker resumes its connectors where their committed offsets say.

Plugins (each a directory of its own on ``plugin.path``, resolved with its runtime
dependencies): Debezium's PostgreSQL source and JDBC sink, Apache Iceberg's sink with
its transforms, Parquet and the shaded Hadoop client a local Hadoop catalog needs (Iceberg
publishes no plugin bundle on Maven Central), and Apicurio Registry's Avro converter (a
schema registry's converter for Connect that Maven Central publishes; Confluent's is not
there).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from kaudit.connection.properties import properties_text
from kaudit.errors import LabError
from kaudit.jvm import resolve_jars
from kaudit.lab.layout import LAB_JIT
from kaudit.lab.runtime import KafkaRuntime, logging_artifacts
from kaudit.lab.state import LabNode, LabState
from kaudit.waiting import Deadline

CONNECT_ID = 200
CONNECT_HEAP = os.environ.get("KAUDIT_LAB_CONNECT_HEAP", "512m")
GROUP = "kaudit-lab-connect"

DEBEZIUM_POSTGRES = "3.6.1.Final"
DEBEZIUM_JDBC = "3.4.0.Final"
"""The newest Debezium JDBC sink whose dependencies all resolve from Maven Central."""
ICEBERG = "1.10.1"
"""1.10.0 on Maven Central lacks iceberg-kafka-connect-events, which its connector needs."""
HADOOP_CLIENT = "3.4.1"
APICURIO_CONVERTER = "2.6.13.Final"
"""The newest Apicurio converter whose dependencies all resolve from Maven Central (3.x's
parent POMs are not all there); it speaks the v2 API that registries 2.x and 3.x serve."""

PLUGINS: dict[str, list[tuple[str, str, str]]] = {
    f"debezium-postgres-{DEBEZIUM_POSTGRES}": [
        ("io.debezium", "debezium-connector-postgres", DEBEZIUM_POSTGRES)],
    f"debezium-jdbc-{DEBEZIUM_JDBC}": [
        ("io.debezium", "debezium-connector-jdbc", DEBEZIUM_JDBC)],
    f"iceberg-{ICEBERG}": [
        ("org.apache.iceberg", "iceberg-kafka-connect", ICEBERG),
        ("org.apache.iceberg", "iceberg-kafka-connect-transforms", ICEBERG),
        ("org.apache.iceberg", "iceberg-parquet", ICEBERG),
        ("org.apache.hadoop", "hadoop-client-api", HADOOP_CLIENT),
        ("org.apache.hadoop", "hadoop-client-runtime", HADOOP_CLIENT)],
    f"apicurio-converter-{APICURIO_CONVERTER}": [
        ("io.apicurio", "apicurio-registry-utils-converter", APICURIO_CONVERTER)],
}
"""Plugin directory -> the artifacts resolved into it."""

_LOG4J2 = """status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""

_JACKSON = ("jackson-core", "jackson-databind", "jackson-annotations")

_MARKERS = {"debezium-postgres": "debezium-connector-postgres-*.jar",
            "debezium-jdbc": "debezium-connector-jdbc-*.jar",
            "iceberg": "iceberg-kafka-connect-[0-9]*.jar",
            "apicurio-converter": "apicurio-registry-utils-converter-*.jar"}

_MANIFESTS = {"apicurio-converter": {
    "org.apache.kafka.connect.storage.Converter": [
        "io.apicurio.registry.utils.converter.AvroConverter"]}}
"""ServiceLoader manifests a plugin's jars lack (the worker discovers plugins by them, see
``plugin.discovery``): written into a jar of their own, as Kafka's ``connect-plugin-path
sync-manifests`` writes them."""


def connect_classpath(kafka_version: str) -> str:
    """The worker's classpath: Kafka's connect-runtime and the lab's logging jars."""
    libs = resolve_jars(f"kafka/{kafka_version}-connect",
                        [("org.apache.kafka", "connect-runtime", kafka_version),
                         *logging_artifacts()],
                        what=f"Kafka Connect {kafka_version}", marker="connect-runtime-*.jar")
    return f"{libs.resolve()}/*"


def plugin_path() -> list[Path]:
    """Each plugin's directory, resolved with Maven on first use."""
    paths = []
    for name, artifacts in PLUGINS.items():
        kind = name.rsplit("-", 1)[0]
        # Jackson comes from the worker, as in Kafka's own distribution: a plugin's own
        # copy meets the worker's Jackson modules (found by ServiceLoader through the
        # parent class loader) and fails with "not a subtype".
        libs = resolve_jars(f"connect-plugins/{name}", artifacts, what=f"the {name} plugin",
                            marker=_MARKERS[kind], exclude=_JACKSON)
        if kind in _MANIFESTS:
            _write_manifests(libs / "kaudit-lab-manifests.jar", _MANIFESTS[kind])
        paths.append(libs.parent)
    return paths


def _write_manifests(jar: Path, services: dict[str, list[str]]) -> None:
    """A jar of ``services`` manifests, written once (whole or not at all)."""
    if jar.is_file():
        return
    partial = jar.with_name(f"{jar.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w") as archive:
        for service, classes in services.items():
            archive.writestr(f"META-INF/services/{service}", "".join(f"{c}\n" for c in classes))
    partial.replace(jar)


def worker_properties(state: LabState, port: int, plugins: list[Path],
                      extra: dict[str, str]) -> dict[str, str]:
    """The worker's settings: the lab's brokers (as the lab's admin on a secured lab, for
    its own clients and its connectors' alike), JSON with schemas, REST on ``port``."""
    rf = str(min(3, len(state.brokers)))
    props = {
        "bootstrap.servers": state.bootstrap,
        "group.id": GROUP,
        "config.storage.topic": f"{GROUP}-configs",
        "offset.storage.topic": f"{GROUP}-offsets",
        "status.storage.topic": f"{GROUP}-status",
        "config.storage.replication.factor": rf,
        "offset.storage.replication.factor": rf,
        "status.storage.replication.factor": rf,
        # Source connectors' offsets in 5 partitions, not 25: a worker reads them all at
        # each start, and the lab's handful of connectors needs few (as the brokers' own
        # state topics, kaudit.lab.layout.INTERNAL_PARTITIONS).
        "offset.storage.partitions": "5",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "listeners": f"http://127.0.0.1:{port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(port),
        "plugin.path": ",".join(str(p) for p in plugins),
        # Every plugin here lists its classes in ServiceLoader manifests: reading those
        # instead of scanning every jar saves most of a start on two cores.
        "plugin.discovery": "service_load",
        # A killed worker's place in its group, and its sink tasks' in theirs, ends within
        # seconds (not Kafka's 45 s), and its connectors are given out again at once when
        # it comes back: a restart in the lab takes seconds.
        "session.timeout.ms": "10000",
        "heartbeat.interval.ms": "3000",
        "scheduled.rebalance.max.delay.ms": "0",
        "consumer.session.timeout.ms": "10000",
        "consumer.heartbeat.interval.ms": "3000",
    }
    security = _security_settings(state)
    for prefix in ("", "producer.", "consumer.", "admin."):
        props |= {prefix + k: v for k, v in security.items()}
    return props | extra


def _security_settings(state: LabState) -> dict[str, str]:
    from kaudit.connection.properties import read_properties
    from kaudit.lab import security as sec

    path = state.client_properties_for(sec.ADMIN)
    return dict(read_properties(path).values) if path else {}


def add_worker(state: LabState, runtime: KafkaRuntime, port: int,
               extra: dict[str, str]) -> LabNode:
    """Lay out the worker node (its properties file and command line); nothing starts."""
    directory = Path(state.state_dir) / f"connect-{CONNECT_ID}"
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "worker.properties"
    config.write_text(properties_text(
        worker_properties(state, port, plugin_path(), extra)), encoding="utf-8")
    config.chmod(0o600)  # a secured lab's password is in it
    (directory / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
    argv = [
        runtime.java, f"-Xmx{CONNECT_HEAP}", "-Xms64m", "-XX:+UseG1GC", *LAB_JIT,
        "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
        # Properties, not the brokers' YAML: Connect's classpath has no YAML parser.
        f"-Dlog4j2.configurationFile={directory / 'log4j2.properties'}",
        f"-Dkaudit.lab.node={directory}",
        "-cp", connect_classpath(state.kafka_version),
        # The main class, then the properties file as its only argument: Iceberg's sink
        # reads the worker's settings for its own clients from this command line.
        "org.apache.kafka.connect.cli.ConnectDistributed", str(config.resolve()),
    ]
    node = LabNode(id=CONNECT_ID, role="connect", port=port, directory=str(directory),
                   argv=argv)
    state.nodes.append(node)
    return node


def rest(node: LabNode, method: str, path: str, body: Any = None,
         timeout: float = 10) -> Any:
    """A call to the worker's REST API; its JSON answer (None for an empty one). An HTTP
    error is a LabError with the worker's message."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.port}{path}", data=data, method=method,
        headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read().decode()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        raise LabError(f"Kafka Connect {method} {path}: HTTP {exc.code}: {detail}") from None
    return json.loads(text) if text.strip() else None


def health(node: LabNode, timeout: float = 5) -> int | None:
    """The HTTP status of the worker's ``GET /health`` (KIP-1017, Kafka 3.9 and later): 200
    once it has read its internal topics and joined its group, 503 while it starts; None
    for 404 (its REST resources not registered yet, or a worker without the endpoint).
    OSError while its REST server is not listening."""
    url = f"http://127.0.0.1:{node.port}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return None if exc.code == 404 else exc.code


def _not_started(node: LabNode) -> str | None:
    """Why the worker has not finished starting, or None once it has."""
    status = health(node)
    if status is None:
        # /connectors answering says the REST resources are registered (a LabError until
        # then): a /health still missing after that is a worker from before Kafka 3.9.
        rest(node, "GET", "/connectors", timeout=5)
        if (status := health(node)) is None:
            return None
    return None if status == 200 else f"GET /health: HTTP {status}"


def wait_worker_ready(node: LabNode, wait_s: float) -> None:
    """Block until the worker has started: its internal topics read, its group joined, so
    that a connector created now is taken at once; a LabError if its process dies or the
    time is up. ``GET /connectors`` answers before that (KAFKA-10816): a PUT sent on its
    word waited out the worker's start. It is the sign only for a worker without /health."""
    from kaudit.lab.process import log_tail
    from kaudit.lab.state import NodeState, node_state

    deadline = Deadline(wait_s)
    last = "no answer yet"
    while not deadline.expired():
        if node_state(node) is NodeState.down:
            raise LabError(f"connect {node.id} exited during start: {log_tail(node.log_path)}",
                           hint=f"full log: {node.log_path}")
        try:
            if (why := _not_started(node)) is None:
                return
            last = why
        except (LabError, OSError) as exc:
            last = str(exc)[:200]
        time.sleep(deadline.slice(0.1))
    raise LabError(f"connect {node.id} not ready after {wait_s:g}s: {last}",
                   hint=f"its log: {node.log_path}")
