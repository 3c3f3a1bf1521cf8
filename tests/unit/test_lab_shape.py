"""What shapes a lab beyond its size, without starting one: `--broker-config [ID:]KEY=VALUE`,
the controller quorum (static or dynamic), tiered storage, and how the lab's state keeps
them (a state file from before them still loads)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kaudit.errors import InputError, LabStateError
from kaudit.lab import tiered
from kaudit.lab.brokerconfig import BrokerConfig, parse_broker_config
from kaudit.lab.layout import _node_properties
from kaudit.lab.manager import _refuse_other_shape
from kaudit.lab.quorum import Quorum, format_arguments, kafka_uuid, quorum_properties, voters
from kaudit.lab.state import LabNode, LabState
from tests.conftest import run_in_process


def test_broker_config_for_every_broker_and_for_one() -> None:
    parsed = parse_broker_config([
        "log.flush.interval.messages=1000", "2:replica.lag.time.max.ms=60000",
        " 3 : a =b=c", "listeners=PLAINTEXT://127.0.0.1:{port}",
        "2:log.flush.interval.messages=5"])
    assert parsed.every == {"log.flush.interval.messages": "1000",
                            "listeners": "PLAINTEXT://127.0.0.1:{port}"}
    assert parsed.by_broker == {2: {"replica.lag.time.max.ms": "60000",
                                    "log.flush.interval.messages": "5"}, 3: {"a": "b=c"}}
    # A broker's own setting wins over every broker's, whatever the order given.
    assert parsed.of(2)["log.flush.interval.messages"] == "5"
    assert parsed.of(1) == parsed.every
    assert parsed.per_broker([1, 2, 3])[3] == parsed.every | {"a": "b=c"}
    assert not parse_broker_config([]) and parsed


@pytest.mark.parametrize("item,message", [
    ("nonsense", "--broker-config 'nonsense': expected [ID:]KEY=VALUE"),
    ("2:", "--broker-config '2:': expected [ID:]KEY=VALUE"),
    ("2:=5", "--broker-config '2:': expected [ID:]KEY=VALUE"),
    ("x:a=b", "--broker-config 'x:a': expected [ID:]KEY=VALUE with ID a broker id"),
    ("0:a=b", "--broker-config '0:a': expected [ID:]KEY=VALUE with ID a broker id"),
    (":a=b", "--broker-config ':a': expected [ID:]KEY=VALUE with ID a broker id"),
    # Only what comes before "=" is echoed: a value may be a secret.
    ("2:sasl.jaas.config", "--broker-config '2:sasl.jaas.config': expected"),
])
def test_bad_broker_config_is_one_line_that_does_not_echo_a_value(item: str,
                                                                   message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_broker_config([item])
    assert str(caught.value.message).startswith(message)
    assert "\n" not in str(caught.value.message)


def test_an_unknown_broker_id_is_refused_naming_the_brokers() -> None:
    parsed = parse_broker_config(["7:a=b"])
    with pytest.raises(InputError, match=r"--broker-config 7:\.\.\.: the lab has no broker 7 "
                                         r"\(its brokers: 1\.\.3\)"):
        parsed.check_ids(range(1, 4))
    parsed.check_ids(range(1, 8))


def test_lab_up_refuses_bad_broker_config_before_anything_starts(tmp_path: Path) -> None:
    # --kafka-home points nowhere: had lab up gone as far as looking for Kafka, it would
    # say so instead.
    for args, said in [(("--broker-config", "4:a=b"), "the lab has no broker 4"),
                       (("--brokers", "1", "--broker-config", "2:a=b"), "no broker 2"),
                       (("--broker-config", "b:a=b"), "with ID a broker id")]:
        result = run_in_process("lab", "up", "--kafka-home", str(tmp_path / "none"),
                                "--state-dir", str(tmp_path / "lab"), *args)
        assert result.code == 2, result.stderr
        errors = result.stderr.splitlines()
        assert len(errors) == 1 and said in errors[0] and "--kafka-home" not in errors[0]
        assert not list((tmp_path / "lab").glob("broker-*"))


def _state(tmp_path: Path, config: BrokerConfig, **kw: object) -> LabState:
    every, by_id = config.to_state()
    nodes = [LabNode(i, "broker", 1000 + i, str(tmp_path / f"broker-{i}"), [])
             for i in (1, 2, 3)] + [LabNode(100, "controller", 1100, str(tmp_path / "c"), [])]
    return LabState(state_dir=str(tmp_path), cluster_id="c", kafka_version="4.3.1",
                    nodes=nodes, broker_config=every, broker_config_by_id=by_id,
                    **kw)  # type: ignore[arg-type]


def test_state_keeps_each_brokers_settings_the_quorum_and_tiering(tmp_path: Path) -> None:
    config = parse_broker_config(["a=1", "2:replica.lag.time.max.ms=60000"])
    state = _state(tmp_path, config, quorum="dynamic", tiered_storage=True)
    state.save()
    raw = json.loads((tmp_path / "lab.json").read_text())
    assert raw["broker_config"] == {"a": "1"}
    assert raw["broker_config_by_id"] == {"2": {"replica.lag.time.max.ms": "60000"}}
    loaded = LabState.load(tmp_path)
    assert loaded == state
    assert loaded.broker_settings == config
    assert (loaded.quorum, loaded.tiered_storage) == ("dynamic", True)


def test_a_state_file_from_before_per_broker_settings_still_loads(tmp_path: Path) -> None:
    old = {"state_dir": str(tmp_path), "cluster_id": "c", "kafka_version": "4.3.1",
           "nodes": [{"id": 1, "role": "broker", "port": 1, "directory": str(tmp_path),
                      "argv": [], "pid": None}],
           "broker_config": {"min.insync.replicas": "2"}, "security": "plaintext"}
    (tmp_path / "lab.json").write_text(json.dumps(old))
    loaded = LabState.load(tmp_path)
    assert loaded.broker_settings == BrokerConfig({"min.insync.replicas": "2"}, {})
    assert (loaded.quorum, loaded.tiered_storage) == ("static", False)
    assert loaded.broker_settings.per_broker([1]) == {1: {"min.insync.replicas": "2"}}


def test_a_restart_compares_each_brokers_settings(tmp_path: Path) -> None:
    existing = _state(tmp_path, parse_broker_config(["a=1", "2:b=2"]))
    same = [["a=1", "2:b=2"], ["1:a=1", "2:a=1", "3:a=1", "2:b=2"], []]
    for items in same:
        _refuse_other_shape(existing, None, None, parse_broker_config(items), None, None,
                            False)
    for items in (["a=1"], ["a=1", "b=2"], ["a=1", "3:b=2"], ["a=1", "2:b=3"]):
        with pytest.raises(LabStateError, match="--broker-config differs"):
            _refuse_other_shape(existing, None, None, parse_broker_config(items), None,
                                None, False)
    with pytest.raises(InputError, match="no broker 4"):
        _refuse_other_shape(existing, None, None, parse_broker_config(["4:b=2"]), None,
                            None, False)
    with pytest.raises(LabStateError, match="has a static controller quorum"):
        _refuse_other_shape(existing, None, None, BrokerConfig(), None, Quorum.dynamic, False)
    _refuse_other_shape(existing, None, None, BrokerConfig(), None, Quorum.static, False)
    with pytest.raises(LabStateError, match="without --tiered-storage"):
        _refuse_other_shape(existing, None, None, BrokerConfig(), None, None, True)


def test_kafka_uuids_look_like_kafkas_and_never_start_with_a_dash() -> None:
    drawn = {kafka_uuid() for _ in range(2000)}
    assert len(drawn) == 2000
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", u) for u in drawn)


def test_a_static_quorum_names_its_voters_in_every_nodes_config() -> None:
    members = voters(Quorum.static, [(100, 5000), (101, 5001), (102, 5002)])
    assert quorum_properties(Quorum.static, members) == {
        "controller.quorum.voters": "100@127.0.0.1:5000,101@127.0.0.1:5001,102@127.0.0.1:5002"}
    assert format_arguments(Quorum.static, "controller", members) == []
    assert format_arguments(Quorum.static, "broker", members) == []


def test_a_dynamic_quorum_is_formatted_with_its_initial_controllers() -> None:
    members = voters(Quorum.dynamic, [(100, 5000), (101, 5001), (102, 5002)])
    assert len({m.directory_id for m in members}) == 3
    assert quorum_properties(Quorum.dynamic, members) == {
        "controller.quorum.bootstrap.servers": "127.0.0.1:5000,127.0.0.1:5001,127.0.0.1:5002"}
    flag, value = format_arguments(Quorum.dynamic, "controller", members)
    assert flag == "--initial-controllers"
    assert value.split(",") == [f"{m.id}@127.0.0.1:{m.port}:{m.directory_id}"
                                for m in members]
    assert format_arguments(Quorum.dynamic, "broker", members) == ["--no-initial-controllers"]


def test_node_configs_carry_the_quorum_their_own_settings_and_tiering(tmp_path: Path) -> None:
    members = voters(Quorum.dynamic, [(100, 5000)])
    quorum = quorum_properties(Quorum.dynamic, members)
    jars = tmp_path / "jars"
    tiering = tiered.broker_properties(tmp_path, jars, 3, listener="PLAINTEXT")
    broker = _node_properties(2, "broker", 4002, tmp_path / "broker-2", quorum, 3,
                              {"replica.lag.time.max.ms": "60000",
                               "remote.log.manager.task.interval.ms": "9000"},
                              tiered=tiering)
    assert broker["controller.quorum.bootstrap.servers"] == "127.0.0.1:5000"
    assert "controller.quorum.voters" not in broker
    assert broker["replica.lag.time.max.ms"] == "60000"
    # --broker-config has the last word, over the lab's own tiering settings too.
    assert broker["remote.log.manager.task.interval.ms"] == "9000"
    assert broker["remote.log.storage.system.enable"] == "true"
    assert broker["remote.log.storage.manager.class.name"] == (
        "org.apache.kafka.server.log.remote.storage.LocalTieredStorage")
    assert broker["remote.log.storage.manager.class.path"] == f"{jars.resolve()}/*"
    assert broker["rsm.config.dir"] == str((tmp_path / "tiered-storage").resolve())
    assert broker["remote.log.metadata.manager.listener.name"] == "PLAINTEXT"
    # Three brokers fit Kafka's own defaults for __remote_log_metadata: they are kept.
    assert not any(k.startswith(("rlmm.config.remote.log.metadata.topic.replication",
                                 "rlmm.config.remote.log.metadata.topic.min")) for k in broker)
    controller = _node_properties(100, "controller", 5000, tmp_path / "c", quorum, 3, {},
                                  tiered=tiered.CONTROLLER_PROPERTIES)
    # A controller validates a tiered topic's creation against its own settings.
    assert {k: v for k, v in controller.items() if k.startswith(("remote.", "rsm.", "rlmm."))
            } == {"remote.log.storage.system.enable": "true"}
    one = tiered.broker_properties(tmp_path, jars, 1, listener="PLAINTEXT")
    assert one["rlmm.config.remote.log.metadata.topic.replication.factor"] == "1"
    assert one["rlmm.config.remote.log.metadata.topic.min.isr"] == "1"
    two = tiered.broker_properties(tmp_path, jars, 2, listener="PLAINTEXT")
    assert two["rlmm.config.remote.log.metadata.topic.replication.factor"] == "2"
    assert "rlmm.config.remote.log.metadata.topic.min.isr" not in two
    assert tiered.remote_root(tmp_path) == tmp_path / "tiered-storage" / "kafka-tiered-storage"


def test_a_secured_lab_with_tiered_storage_is_refused_before_anything_starts(
        tmp_path: Path) -> None:
    result = run_in_process("lab", "up", "--tiered-storage", "--security", "mtls",
                            "--kafka-home", str(tmp_path / "none"),
                            "--state-dir", str(tmp_path / "lab"))
    assert result.code == 2
    assert result.stderr.startswith("kaudit: error: --tiered-storage runs on a plaintext lab")


def test_the_status_says_the_quorum_and_where_remote_segments_are(tmp_path: Path) -> None:
    from kaudit.report.lab import LabStatus, status_document, status_table

    plain = _state(tmp_path, BrokerConfig())
    doc = status_document(LabStatus(plain))
    assert (doc["quorum"], doc["tiered_storage"]) == ("static", None)
    assert "quorum     static, 1 controller\n" in status_table(LabStatus(plain))
    assert "tiered" not in status_table(LabStatus(plain))
    tiered_lab = _state(tmp_path, BrokerConfig(), quorum="dynamic", tiered_storage=True)
    doc = status_document(LabStatus(tiered_lab))
    remote = str(tmp_path / "tiered-storage" / "kafka-tiered-storage")
    assert (doc["quorum"], doc["tiered_storage"]) == ("dynamic", remote)
    assert f"tiered     remote segments in {remote}\n" in status_table(LabStatus(tiered_lab))
