"""The lab's Kafka Connect worker: its settings and its place in the lab's status."""

from __future__ import annotations

from pathlib import Path

from kaudit.lab.connect import CONNECT_ID, GROUP, worker_properties
from kaudit.lab.state import LabNode, LabState
from kaudit.report.lab import LabStatus, status_document, status_table


def lab(tmp_path: Path, brokers: int = 3) -> LabState:
    state = LabState(state_dir=str(tmp_path), cluster_id="c", kafka_version="4.3.1")
    state.nodes = [LabNode(i, "broker", 9000 + i, str(tmp_path / f"broker-{i}"), [])
                   for i in range(1, brokers + 1)]
    state.nodes.append(LabNode(CONNECT_ID, "connect", 8083, str(tmp_path / "connect"), []))
    return state


def test_the_worker_reaches_the_labs_brokers_and_serves_rest_on_its_port(
        tmp_path: Path) -> None:
    plugins = [tmp_path / "jdbc", tmp_path / "iceberg"]
    props = worker_properties(lab(tmp_path, brokers=1), 8083, plugins,
                              {"offset.flush.interval.ms": "600000"})
    assert props["bootstrap.servers"] == "127.0.0.1:9001"
    assert props["group.id"] == GROUP
    # A one-broker lab cannot hold topics of RF 3 (Connect's default).
    assert {props[f"{kind}.storage.replication.factor"]
            for kind in ("config", "offset", "status")} == {"1"}
    assert props["listeners"] == "http://127.0.0.1:8083"
    assert props["plugin.path"] == f"{plugins[0]},{plugins[1]}"
    assert props["offset.flush.interval.ms"] == "600000"  # the caller's setting wins
    assert "security.protocol" not in props  # a plaintext lab


def test_a_secured_labs_worker_and_its_connectors_clients_use_the_admins_settings(
        tmp_path: Path, monkeypatch: object) -> None:
    import kaudit.lab.connect as connect

    secured = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    monkeypatch.setattr(connect, "_security_settings", lambda state: secured)  # type: ignore
    props = worker_properties(lab(tmp_path), 8083, [], {})
    for prefix in ("", "producer.", "consumer.", "admin."):
        assert props[prefix + "security.protocol"] == "SASL_SSL"
        assert props[prefix + "sasl.mechanism"] == "SCRAM-SHA-512"


def test_the_status_lists_the_worker_with_its_rest_address(tmp_path: Path) -> None:
    status = LabStatus(lab(tmp_path))
    doc = status_document(status)
    [worker] = doc["connect"]
    assert (worker["id"], worker["role"], worker["rest"], worker["state"]) == (
        CONNECT_ID, "connect", "http://127.0.0.1:8083", "down")
    assert "connect" in status_table(status).splitlines()[-1]


class _Worker:
    """A REST server on loopback, as a starting worker's: its first ``unregistered``
    requests get 404 (its REST resources not registered yet); then ``GET /health``
    answers with ``healths`` in turn (the last one again once they run out) and
    ``GET /connectors`` with an empty list. It records every path asked."""

    def __init__(self, healths: list[int], unregistered: int = 0) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.asked: list[str] = []
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # http.server calls it by this name
                worker.asked.append(self.path)
                code = 200
                if len(worker.asked) <= unregistered:
                    code = 404
                elif self.path == "/health":
                    code = healths.pop(0) if len(healths) > 1 else healths[0]
                body = b"[]" if code == 200 else b'{"status": "starting"}'
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.node = LabNode(CONNECT_ID, "connect", self.server.server_address[1], "/nowhere", [])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _running(monkeypatch: object) -> None:
    import kaudit.lab.state as state

    monkeypatch.setattr(state, "node_state", lambda node: state.NodeState.running)  # type: ignore


def _asked_until_ready(monkeypatch: object, worker: _Worker, wait_s: float = 30) -> list[str]:
    from kaudit.lab.connect import wait_worker_ready

    _running(monkeypatch)
    try:
        wait_worker_ready(worker.node, wait_s)
    finally:
        worker.close()
    return worker.asked


def test_a_worker_is_ready_when_its_health_says_so_not_when_it_first_answers(
        monkeypatch: object) -> None:
    assert _asked_until_ready(monkeypatch, _Worker([503, 503, 200])) == ["/health"] * 3


def test_connectors_listed_while_health_says_starting_is_not_ready(
        monkeypatch: object) -> None:
    # The first /health comes before the resources are registered; /connectors after.
    asked = _asked_until_ready(monkeypatch, _Worker([503, 200], unregistered=1))
    assert asked == ["/health", "/connectors", "/health", "/health"]


def test_a_worker_without_a_health_endpoint_is_ready_when_it_lists_connectors(
        monkeypatch: object) -> None:
    asked = _asked_until_ready(monkeypatch, _Worker([404], unregistered=2))
    assert asked == ["/health", "/connectors", "/health", "/connectors", "/health"]


def test_a_worker_still_starting_when_the_time_is_up_is_a_lab_error_saying_so(
        monkeypatch: object) -> None:
    import pytest

    from kaudit.errors import LabError

    worker = _Worker([503])
    with pytest.raises(LabError, match=r"not ready after 0.5s: GET /health: HTTP 503"):
        _asked_until_ready(monkeypatch, worker, 0.5)
    assert len(worker.asked) >= 2 and set(worker.asked) == {"/health"}
