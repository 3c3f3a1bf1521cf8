"""The lab's Kafka Connect worker for the pipeline tests: added to the session's lab for a
module and taken out of it afterwards (stopped, and its node removed from lab.json), so that
the lab's other tests see the lab they always did; its connectors made, watched and
removed through its REST API."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kaudit.lab.connect import CONNECT_ID, rest
from kaudit.lab.state import LabNode, LabState, locked
from tests.conftest import Lab, lab_admin

WORKER_SETTINGS = {
    # Sink offsets are committed at this interval (and on a clean stop): a worker killed
    # before it passes has committed none, so its sinks get every record again.
    "offset.flush.interval.ms": "600000",
}


@contextmanager
def connect_worker(lab: Lab, settings: dict[str, str] | None = None) -> Iterator[LabNode]:
    """The lab with a Connect worker for the duration of the block (its settings
    :data:`WORKER_SETTINGS`, or ``settings``)."""
    # A group (and config, offset and status topics) of the module's own: a worker of an
    # earlier module, however slowly it went, can never be this one's group leader.
    group = f"kaudit-test-connect-{uuid.uuid4().hex[:8]}"
    own = {"group.id": group, "config.storage.topic": f"{group}-configs",
           "offset.storage.topic": f"{group}-offsets", "status.storage.topic": f"{group}-status"}
    args = ["up", "--connect"]
    for key, value in (own | (WORKER_SETTINGS if settings is None else settings)).items():
        args += ["--connect-config", f"{key}={value}"]
    result = lab.kaudit(*args, timeout=600)
    assert result.code == 0, result.stderr
    node = worker_node(lab)
    try:
        yield node
    finally:
        # Connectors live in the lab's config topic: a test that failed half-way must not
        # leave one to start again with the next module's worker.
        for name in rest(node, "GET", "/connectors") or []:
            delete_connector(node, name)
        stopped = lab.kaudit("kill", str(CONNECT_ID), "--signal", "TERM")
        if stopped.code != 0 and "already down" not in stopped.stderr:
            # Stuck in its shutdown (seen on a busy machine): no worker outlives its module.
            killed = lab.kaudit("kill", str(CONNECT_ID), "--signal", "KILL")
            assert killed.code == 0, stopped.stderr + killed.stderr
        state_dir = Path(lab.state_dir)
        with locked(state_dir):
            state = LabState.load(state_dir)
            state.nodes = [n for n in state.nodes if n.role != "connect"]
            state.save()
        # Its internal topics (31 partitions, RF 3) would stay in the session's lab: every
        # broker restart of every later test would load and lead them again.
        futures = lab_admin(lab.bootstrap).delete_topics(
            [own["config.storage.topic"], own["offset.storage.topic"],
             own["status.storage.topic"]], operation_timeout=30)
        for future in futures.values():
            future.result(60)


def status_topic(node: LabNode) -> str:
    """The worker's status topic (each module's worker has its own)."""
    for line in (Path(node.directory) / "worker.properties").read_text().splitlines():
        if line.startswith("status.storage.topic="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("the worker has no status.storage.topic")


def pipeline_args(node: LabNode, name: str) -> list[str]:
    """reconcile's options that name connector ``name`` on the worker ``node``."""
    return ["--connector", name, "--connect-url", f"http://127.0.0.1:{node.port}",
            "--status-topic", status_topic(node)]


def worker_node(lab: Lab) -> LabNode:
    return LabState.load(Path(lab.state_dir)).node(CONNECT_ID)


def wait_until(condition: Callable[[], Any], within: float, what: str,
               every: float = 0.5) -> Any:
    """``condition``'s first truthy answer, asked every ``every`` seconds (half a second:
    some read a table through Spark); fails after ``within`` seconds, naming ``what``."""
    deadline = time.monotonic() + within
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {within:g}s: {what}"
        time.sleep(every)


def start_connector(node: LabNode, name: str, config: dict[str, str]) -> None:
    """Create (or reconfigure) a connector and wait until it and its tasks run."""
    # The worker validates the config (loading the plugin's classes) before it answers: on
    # a busy two-core machine that may take longer than rest()'s ten seconds.
    rest(node, "PUT", f"/connectors/{name}/config", config, timeout=60)
    wait_running(node, name)


def wait_running(node: LabNode, name: str, within: float = 120) -> None:
    def running() -> bool:
        try:
            status = rest(node, "GET", f"/connectors/{name}/status")
        except Exception:
            return False
        tasks = status.get("tasks", [])
        failed = [t for t in tasks if t["state"] == "FAILED"]
        assert not failed, json.dumps(failed)[:2000]
        return status["connector"]["state"] == "RUNNING" and bool(tasks) and all(
            t["state"] == "RUNNING" for t in tasks)

    # A status is one REST call to the worker: cheap to ask often.
    wait_until(running, within, f"connector {name} and its tasks running", every=0.1)


def delete_connector(node: LabNode, name: str) -> None:
    rest(node, "DELETE", f"/connectors/{name}")


def jdbc_sink(postgres: Any, topic: str, table: str, **settings: str) -> dict[str, str]:
    """Debezium's JDBC sink from ``topic`` into ``table`` of the test PostgreSQL, creating
    the table from the records' schema; ``settings`` add to it (insert mode, keys)."""
    return {
        "connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "connection.url": postgres.jdbc_url,
        "connection.username": postgres.user,
        "connection.password": postgres.password,
        "schema.evolution": "basic",
        "collection.name.format": table,
    } | settings
