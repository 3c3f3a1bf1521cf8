"""The controller quorum and the brokers' configs as kaudit reads them, against what Kafka's
own tools print, run from the lab's jars:

- the quorum as `kafka-metadata-quorum.sh describe --status` and `--replication` print it
  (MetadataQuorumCommand), on the session's lab (one static controller): leader, epoch,
  voters with their endpoints and observers with their directory ids exactly; offsets and
  times within what the log and the clocks can move between kaudit's read and the tool's
  (see ``Moved``); and check's quorum findings the same live and from a snapshot;
- the same on a lab of three controllers, healthy and with one voter frozen (SIGSTOP):
  check names it lagging (KA315) once it has not caught up for the policy's
  max_controller_caught_up_seconds, and the frozen voter's numbers are exactly the tool's;
- each broker's config as `kafka-configs.sh --entity-type brokers --entity-name ID
  --describe --all` prints it (ConfigCommand), with one broker's dynamic config altered
  so that its brokers disagree (KA316 names it), and restored.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kaudit.check.rules.drift import DRIFT_SETTINGS
from tests.conftest import Lab, lab_admin, run_kaudit, wait_for
from tests.integration.audit_lab import AuditLab
from tests.kafka_tools import kafka_tool

pytestmark = pytest.mark.kafka

QUORUM_RULES = ("KA312", "KA313", "KA314", "KA315")
ALTERED = "log.flush.interval.messages"
"""The setting altered on one broker: harmless to the lab, durability-relevant to KA316."""
DRIFTING = 2


def quorum_tool(lab: Lab, *args: str) -> str:
    return kafka_tool("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
                      lab.bootstrap, "describe", *args).stdout


def status_of(text: str) -> dict[str, str]:
    """`describe --status`: ``Key: value`` lines."""
    return {key.strip(): value.strip() for key, value in
            (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def replication_of(text: str) -> dict[int, dict[str, str]]:
    """`describe --replication`: a tab-separated table by NodeId."""
    rows = [[cell.strip() for cell in line.split("\t")] for line in text.splitlines()
            if line.strip()]
    header = rows[0]
    return {int(row[0]): dict(zip(header, row, strict=False)) for row in rows[1:]}


def snapshot(lab: Lab, tmp_path: Path) -> tuple[dict[str, Any], Path]:
    out = tmp_path / f"snap-{time.monotonic_ns()}.json"
    result = run_kaudit("snapshot", "-b", lab.bootstrap, "-o", str(out))
    assert result.code == 0, result.stderr
    return json.loads(out.read_text()), out


@dataclass(frozen=True)
class Moved:
    """How far the metadata log and the leader's clock may move between kaudit's read and
    the tool's, ``seconds`` apart. Records: an idle metadata log grows by a no-op every
    500 ms; four a second, plus 20, leaves room for what else the controller writes (no
    test writes metadata meanwhile). Times: the seconds between the reads, plus one for
    the clocks' ticks. The tool reads after kaudit, so its numbers are never smaller."""

    seconds: float

    @property
    def records(self) -> int:
        return int(4 * self.seconds) + 20

    @property
    def ms(self) -> int:
        return int(self.seconds * 1000) + 1000

    def offset(self, ours: int, theirs: int) -> bool:
        return 0 <= theirs - ours <= self.records

    def time(self, ours: int | None, theirs: str) -> bool:
        if ours is None:
            return int(theirs) < 0
        return 0 <= int(theirs) - ours <= self.ms


def agree_with_the_tool(lab: Lab, tmp_path: Path
                        ) -> tuple[dict[str, Any], dict[int, dict[str, str]]]:
    """kaudit's quorum and Kafka's tool's, read one after the other, agree: exactly on
    who leads, in which epoch, the voters with their endpoints and the observers with
    their directory ids; within ``Moved`` on the high watermark, each log end and each
    time. Returns the quorum and the tool's replication table."""
    started = time.monotonic()
    doc, _ = snapshot(lab, tmp_path)
    status = status_of(quorum_tool(lab, "--status"))
    replication = replication_of(quorum_tool(lab, "--replication"))
    moved = Moved(time.monotonic() - started)
    quorum = doc["quorum"]
    assert quorum is not None, doc["quorum_unread"]
    assert doc["quorum_unread"] is None

    # Exactly: who leads, in which epoch, the voters and their endpoints, the observers.
    assert (quorum["leader_id"], quorum["leader_epoch"]) == \
        (int(status["LeaderId"]), int(status["LeaderEpoch"]))
    voters = json.loads(status["CurrentVoters"])
    assert [v["replica_id"] for v in quorum["voters"]] == [v["id"] for v in voters]
    endpoints = {v["id"]: sorted(v["endpoints"]) for v in voters}
    assert {v["replica_id"]: sorted(f"{e['listener']}://{e['host']}:{e['port']}"
                                    for e in quorum["endpoints"]
                                    if e["node_id"] == v["replica_id"])
            for v in quorum["voters"]} == endpoints
    observers = json.loads(status["CurrentObservers"])
    assert sorted((o["replica_id"], o["directory_id"]) for o in quorum["observers"]) == \
        sorted((o["id"], o.get("directoryId")) for o in observers)
    assert sorted(replication) == sorted(r["replica_id"] for r in
                                         quorum["voters"] + quorum["observers"])

    # Within what moves between the two reads: the high watermark, each log end, each time.
    assert moved.offset(quorum["high_watermark"], int(status["HighWatermark"])), \
        (quorum["high_watermark"], status["HighWatermark"], moved)
    for role, replicas in (("voter", quorum["voters"]), ("observer", quorum["observers"])):
        for ours in replicas:
            theirs = replication[ours["replica_id"]]
            expected_status = "Leader" if ours["replica_id"] == quorum["leader_id"] else \
                "Follower" if role == "voter" else "Observer"
            assert theirs["Status"] == expected_status, theirs
            assert (ours["directory_id"] or "AAAAAAAAAAAAAAAAAAAAAA") == theirs["DirectoryId"]
            assert moved.offset(ours["log_end_offset"], int(theirs["LogEndOffset"])), \
                (ours, theirs, moved)
            assert moved.time(ours["last_fetch_ms"], theirs["LastFetchTimestamp"]), \
                (ours, theirs, moved)
            assert moved.time(ours["last_caught_up_ms"], theirs["LastCaughtUpTimestamp"]), \
                (ours, theirs, moved)
    return quorum, replication


def test_the_quorum_is_what_kafka_metadata_quorum_prints(lab: Lab, tmp_path: Path) -> None:
    quorum, _ = agree_with_the_tool(lab, tmp_path)
    assert len(quorum["voters"]) == 1 and len(quorum["observers"]) == 3


def _quorum_findings(doc: dict[str, Any]) -> list[tuple[str, str, str, str | None, str | None]]:
    return sorted((f["rule"], f["severity"], f["subject"]["name"], f["expected"], f["actual"])
                  for f in doc["findings"] if f["rule"] in QUORUM_RULES)


def test_check_judges_the_labs_one_static_controller_live_and_from_a_snapshot(
        lab: Lab, tmp_path: Path) -> None:
    live = run_kaudit("check", "-b", lab.bootstrap, "-f", "json", "--exit-zero")
    assert live.code == 0, live.stderr
    doc = json.loads(live.stdout)
    assert doc["quorum_unread"] is None
    found = {f["rule"]: f for f in doc["findings"] if f["rule"] in QUORUM_RULES}
    # The lab's controller is one, formatted with controller.quorum.voters (kraft.version 0).
    assert set(found) == {"KA312", "KA313"}, found
    assert (found["KA313"]["actual"], found["KA313"]["expected"]) == ("1", ">= 3 voters")
    assert found["KA313"]["message"].startswith("The controller quorum has 1 voter (100)")
    assert found["KA312"]["actual"] == "kraft.version=0"

    _, file = snapshot(lab, tmp_path)
    offline = run_kaudit("check", "--snapshot", str(file), "-f", "json", "--exit-zero")
    assert offline.code == 0, offline.stderr
    assert _quorum_findings(json.loads(offline.stdout)) == _quorum_findings(doc)


CONFIG_LINE = re.compile(r"^\s+(?P<name>[^=\s]+)=(?P<value>.*) sensitive=(?P<sensitive>true|false)"
                         r" synonyms=\{(?P<synonyms>.*)\}$")


def config_command(lab: Lab, broker: int) -> dict[str, tuple[str | None, str | None]]:
    """`kafka-configs.sh --entity-type brokers --entity-name ID --describe --all`: each
    setting's value (None for null) and where it came from (its first synonym's source)."""
    out = kafka_tool("kafka.admin.ConfigCommand", "--bootstrap-server", lab.bootstrap,
                     "--entity-type", "brokers", "--entity-name", str(broker), "--describe",
                     "--all").stdout
    found: dict[str, tuple[str | None, str | None]] = {}
    for line in out.splitlines():
        match = CONFIG_LINE.match(line)
        if match is None or match["sensitive"] == "true":
            continue
        synonyms = match["synonyms"]
        source = synonyms.split(":", 1)[0] if synonyms else None
        found[match["name"]] = (None if match["value"] == "null" else match["value"], source)
    return found


def kaudit_configs(doc: dict[str, Any], broker: int) -> dict[str, tuple[str | None, str]]:
    return {name: (entry["value"], entry["source"])
            for name, entry in doc["broker_configs"][str(broker)].items()
            if not entry.get("sensitive")}


def _alter(lab: Lab, broker: int, value: str | None) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[
        ConfigEntry(ALTERED, value or "", incremental_operation=op)])
    for future in lab_admin(lab.bootstrap).incremental_alter_configs([resource]).values():
        future.result(30)


def _drift(lab: Lab) -> list[dict[str, Any]]:
    run = run_kaudit("check", "-b", lab.bootstrap, "-f", "json", "--exit-zero")
    assert run.code == 0, run.stderr
    return [f for f in json.loads(run.stdout)["findings"] if f["rule"] == "KA316"]


def _broker_says(lab: Lab, broker: int, value: str | None) -> bool:
    """Broker ``broker`` describes ALTERED with ``value`` as its own dynamic config (None:
    no dynamic config of its own any more)."""
    theirs, source = config_command(lab, broker)[ALTERED]
    if value is None:
        return source != "DYNAMIC_BROKER_CONFIG"
    return (theirs, source) == (value, "DYNAMIC_BROKER_CONFIG")


def test_broker_configs_are_what_kafka_configs_prints_and_drift_is_named(
        lab: Lab, tmp_path: Path) -> None:
    assert _drift(lab) == []  # the lab's brokers start alike
    try:
        _alter(lab, DRIFTING, "1")
        assert wait_for(lambda: _broker_says(lab, DRIFTING, "1"), 60)
        doc, _ = snapshot(lab, tmp_path)
        for broker in sorted(int(b["id"]) for b in doc["brokers"]):
            theirs = config_command(lab, broker)
            ours = kaudit_configs(doc, broker)
            for name in DRIFT_SETTINGS:
                if name in theirs and theirs[name][1] is not None:
                    assert ours.get(name) == theirs[name], (broker, name, ours.get(name),
                                                            theirs[name])
            assert ours[ALTERED] == (("1", "DYNAMIC_BROKER_CONFIG") if broker == DRIFTING
                                     else theirs[ALTERED])
        drift = _drift(lab)
        assert [(f["subject"], f["actual"], f["source"]) for f in drift] == [
            ({"kind": "broker", "name": str(DRIFTING)}, "1", "DYNAMIC_BROKER_CONFIG")]
        assert drift[0]["message"].startswith(f"{ALTERED} is 1 on broker {DRIFTING} "
                                              "(inherited from a per-broker dynamic config)")
        assert "(as on brokers 1, 3)" in drift[0]["expected"]
    finally:
        _alter(lab, DRIFTING, None)
        restored = wait_for(lambda: _broker_says(lab, DRIFTING, None), 60)
    assert restored, f"broker {DRIFTING} still has its own {ALTERED}"
    assert _drift(lab) == []


@pytest.fixture(scope="module")
def three_controllers(audit_lab: AuditLab) -> Lab:
    """The session's audit lab: three controllers in a dynamic quorum (KIP-853), for a
    voter to be frozen; the test resumes it and waits until it has caught up again."""
    return Lab(state_dir=audit_lab.state_dir, bootstrap=audit_lab.bootstrap)


CAUGHT_UP_S = 15
"""The frozen-voter test's max_controller_caught_up_seconds (the profiles' 30, halved): a
live voter catches up many times a second, so it never comes near, and the frozen one is
named 15 s sooner."""


def _lagging(lab: Lab, policy: Path) -> dict[str, Any] | None:
    """Check's KA315 finding, if any; its quorum findings otherwise seen in passing."""
    run = run_kaudit("check", "-b", lab.bootstrap, "-p", str(policy), "-f", "json",
                     "--exit-zero")
    assert run.code == 0, run.stderr
    found = [f for f in json.loads(run.stdout)["findings"] if f["rule"] in QUORUM_RULES]
    assert {f["rule"] for f in found} <= {"KA312", "KA315"}, found  # 3 voters: enough, odd
    lagging = [f for f in found if f["rule"] == "KA315"]
    assert len(lagging) <= 1, lagging
    return lagging[0] if lagging else None


def test_a_frozen_voter_is_named_as_kafka_metadata_quorum_shows_it(
        three_controllers: Lab, tmp_path: Path) -> None:
    lab = three_controllers
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"extends: durable\nthresholds:\n"
                      f"  max_controller_caught_up_seconds: {CAUGHT_UP_S}\n")
    quorum, _ = agree_with_the_tool(lab, tmp_path)
    assert len(quorum["voters"]) == 3 and _lagging(lab, policy) is None
    frozen = next(v["replica_id"] for v in quorum["voters"]
                  if v["replica_id"] != quorum["leader_id"])
    assert lab.kaudit("kill", str(frozen), "--signal", "stop").code == 0
    try:
        # Past max_controller_caught_up_seconds without a fetch, check names it.
        assert wait_for(lambda: _lagging(lab, policy) is not None, 120), \
            f"controller {frozen} frozen and never reported lagging"
        finding = _lagging(lab, policy)
        assert finding is not None
        assert finding["message"].startswith(f"Controller {frozen} ")
        assert "the quorum of 3 voters can lose no other controller" in finding["message"]
        # Frozen, its entry stands still: kaudit and the tool give the same numbers.
        quorum, replication = agree_with_the_tool(lab, tmp_path)
        ours = next(v for v in quorum["voters"] if v["replica_id"] == frozen)
        theirs = replication[frozen]
        assert (str(ours["log_end_offset"]), str(ours["last_fetch_ms"]),
                str(ours["last_caught_up_ms"])) == (
            theirs["LogEndOffset"], theirs["LastFetchTimestamp"],
            theirs["LastCaughtUpTimestamp"])
    finally:
        assert lab.kaudit("start", str(frozen)).code == 0
    assert wait_for(lambda: _lagging(lab, policy) is None, 60), \
        f"controller {frozen} still lagging after it was resumed"


def _voters(audit_lab: AuditLab) -> tuple[int, dict[int, str]]:
    """The quorum's leader and each voter's directory id, as `kafka-metadata-quorum.sh
    describe --status` prints them."""
    status = status_of(kafka_tool(
        "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller",
        audit_lab.bootstrap_controllers, "describe", "--status").stdout)
    voters = json.loads(status["CurrentVoters"])
    return int(status["LeaderId"]), {int(v["id"]): v["directoryId"] for v in voters}


def test_a_voter_removed_leaves_an_even_quorum_named_ka314_until_it_is_added_back(
        audit_lab: AuditLab) -> None:
    # KIP-853: a voter of a dynamic quorum removed (it runs on as an observer), then added
    # back from its own server.properties, as an operator replacing a controller does.
    leader, voters = _voters(audit_lab)
    assert len(voters) == 3, voters
    removed = next(v for v in sorted(voters) if v != leader)
    properties = Path(audit_lab.state_dir) / f"controller-{removed}" / "server.properties"
    quorum_command = ("org.apache.kafka.tools.MetadataQuorumCommand",
                      "--bootstrap-controller", audit_lab.bootstrap_controllers)
    kafka_tool(*quorum_command, "remove-controller", "--controller-id", str(removed),
               "--controller-directory-id", voters[removed])
    try:
        assert wait_for(lambda: removed not in _voters(audit_lab)[1], 60)
        run = run_kaudit("check", "-b", audit_lab.bootstrap, "-f", "json", "--exit-zero")
        found = {f["rule"]: f for f in json.loads(run.stdout)["findings"]
                 if f["rule"] in QUORUM_RULES}
        # Two voters: even (KA314), and fewer than the three the profile requires (KA313).
        assert sorted(found) == ["KA313", "KA314"], found
        assert found["KA314"]["actual"] == "2"
        assert found["KA314"]["message"].startswith(
            f"The controller quorum has 2 voters "
            f"({', '.join(str(v) for v in sorted(voters) if v != removed)})"), found["KA314"]
    finally:
        kafka_tool(*quorum_command, "--command-config", str(properties), "add-controller")
        assert wait_for(lambda: _voters(audit_lab)[1] == voters, 60), \
            f"controller {removed} is not a voter again"
    run = run_kaudit("check", "-b", audit_lab.bootstrap, "-f", "json", "--exit-zero")
    assert not [f for f in json.loads(run.stdout)["findings"]
                if f["rule"] in ("KA313", "KA314")]
