"""Consumer groups in snapshots and the durations KA6xx findings speak in."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from kaudit.check.rules.groups import duration
from kaudit.cluster.model import (
    ClusterSnapshot,
    ConfigSource,
    ConfigValue,
    ConsumerGroup,
    GroupOffset,
    PartitionOffsets,
    ShareGroup,
    ShareMember,
    SharePartition,
    freeze_configs,
    snapshot_from_dict,
    snapshot_to_dict,
)


def _snapshot(groups: tuple[ConsumerGroup, ...] | None) -> ClusterSnapshot:
    return ClusterSnapshot(
        cluster_id="c", controller_id=1, brokers=(), broker_configs={}, topics=(),
        taken_at="2026-06-01T00:00:00+00:00",
        offsets=(PartitionOffsets("orders", 0, 500, 900, 880, 1_780_271_000_000),),
        groups=groups)


def test_groups_and_offsets_survive_a_snapshot_file() -> None:
    snap = _snapshot((ConsumerGroup("billing", "STABLE", 2, (
        GroupOffset("orders", 0, 120, 1_780_000_000_000), GroupOffset("orders", 1, None))),))
    again = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))), "live")
    assert again == snap
    assert again.partition_offsets("orders", 0) == snap.offsets[0]
    assert again.partition_offsets("orders", 1) is None


def test_share_groups_survive_a_snapshot_file() -> None:
    share = ShareGroup(
        group_id="jobs", state="Stable", coordinator=2, group_epoch=3, assignment_epoch=3,
        members=(ShareMember("m1", "w0", "127.0.0.1", 2, ("orders",),
                             (("orders", (0, 1)),)),),
        partitions=(SharePartition("orders", 0, 880, 0, 20, 1_780_000_000_000),
                    SharePartition("orders", 1, None)),
        configs=freeze_configs({"share.auto.offset.reset": ConfigValue(
            "share.auto.offset.reset", "earliest", ConfigSource.GROUP_CONFIG)}),
        unread="offsets of orders-2: TOPIC_AUTHORIZATION_FAILED")
    snap = replace(_snapshot(()), share_groups=(share,))
    again = snapshot_from_dict(json.loads(json.dumps(snapshot_to_dict(snap))), "live")
    assert again == snap


def test_groups_not_read_stay_unknown_and_old_snapshots_still_load() -> None:
    doc = snapshot_to_dict(_snapshot(None))
    assert doc["groups"] is None and doc["share_groups"] is None
    # a snapshot written before groups (or share groups) were read
    del doc["groups"], doc["offsets"], doc["share_groups"]
    old = snapshot_from_dict(doc, "snapshot:old.json")
    assert old.groups is None and old.offsets == () and old.share_groups is None


@pytest.mark.parametrize("ms, text", [
    (0, "0 s"), (45_000, "45 s"), (60_000, "1 min"), (3_540_000, "59 min"),
    (12_000_000, "3 h 20 min"), (7_200_000, "2 h"), (86_400_000, "1 d"),
    (187_200_000, "2 d 4 h"), (-5, "0 s")])
def test_durations_read_as_an_operator_says_them(ms: int, text: str) -> None:
    assert duration(ms) == text


def test_a_topics_guarantee_names_its_readers_and_whether_they_keep_up() -> None:
    from kaudit_rule_cases import build_snapshot

    from kaudit.check.engine import evaluate
    from kaudit.check.guarantees import topic_guarantee
    from kaudit.check.policy.loader import load_policies
    from kaudit.report.base import RenderOptions, render
    from kaudit.report.check import CHECK

    snap = build_snapshot({
        "topics": [{"name": "orders", "partitions": 2}],
        "offsets": [{"topic": "orders", "partition": 0, "log_start": 0, "high_watermark": 900},
                    {"topic": "orders", "partition": 1, "log_start": 0, "high_watermark": 50}],
        "groups": [
            {"group_id": "billing", "offsets": [{"topic": "orders", "partition": 0,
                                                 "committed": 900},
                                                {"topic": "orders", "partition": 1,
                                                 "committed": 50}]},
            {"group_id": "audit", "offsets": [{"topic": "orders", "partition": 0,
                                               "committed": 800, "unread_minutes_ago": 200},
                                              {"topic": "orders", "partition": 1,
                                               "committed": 40, "unread_minutes_ago": 30}]},
            {"group_id": "other", "offsets": [{"topic": "payments", "committed": 1}]}],
        "share_groups": [
            {"group_id": "jobs", "members": 0, "partitions": [
                {"topic": "orders", "partition": 0, "start_offset": 880, "lag": 20,
                 "undelivered_minutes_ago": 90},
                {"topic": "orders", "partition": 1, "start_offset": None}]},
            {"group_id": "late", "subscribed": ["orders"]}],
        "features": {"metadata.version": "4.3-IV0", "transaction.version": 2}})
    readers = topic_guarantee(snap.topics[0], snap).readers
    # A share group that holds no state on the topic yet reads nothing of it.
    assert [(r.group, r.kind, r.lag, r.oldest_unread_age_ms) for r in readers] == [
        ("billing", "consumer", 0, None), ("audit", "consumer", 110, 200 * 60_000),
        ("jobs", "share", 20, 90 * 60_000)]
    result = evaluate(snap, load_policies(["durable"]))
    text = render(CHECK, result, "table", RenderOptions(tool_version="0", width=200))
    # A cell's lines read as one text (the table wraps its cells).
    cells = " ".join(" ".join(line.replace("|", " ").split()) for line in text.splitlines()
                     if not line.startswith("+"))
    assert "read by billing (caught up), audit (lag 110, oldest unread 3 h 20 min), " \
        "share group jobs (lag 20, oldest unread 1 h 30 min)" in cells
    assert "features: metadata.version=4.3-IV0, transaction.version=2" in text
    # eligible.leader.replicas.version not finalized: ELR is off, and the guarantee says so
    assert "ELR off: when the last in-sync replica fails, the partition stays offline" in cells
    doc = json.loads(render(CHECK, result, "json", RenderOptions(tool_version="0")))
    assert doc["features"] == {"metadata.version": "4.3-IV0", "transaction.version": "2"}
    assert doc["guarantees"][0]["readers"][1] == {"group": "audit", "kind": "consumer",
                                                  "lag": 110, "oldest_unread_age_ms": 12_000_000}
    assert doc["guarantees"][0]["readers"][2]["kind"] == "share"


def test_a_snapshot_time_without_a_zone_is_utc_and_one_that_is_no_time_is_refused() -> None:
    doc = snapshot_to_dict(_snapshot(None))
    doc["taken_at"] = "2026-06-01T00:00:00"
    assert snapshot_from_dict(doc, "snapshot:x.json").taken_at_ms == 1_780_272_000_000
    doc["taken_at"] = "June 1st"
    with pytest.raises(ValueError):
        snapshot_from_dict(doc, "snapshot:x.json")
