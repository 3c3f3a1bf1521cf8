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
