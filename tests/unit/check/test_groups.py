"""Consumer groups in snapshots and the durations KA6xx findings speak in."""

from __future__ import annotations

import json

import pytest

from kaudit.check.rules.groups import duration
from kaudit.cluster.model import (
    ClusterSnapshot,
    ConsumerGroup,
    GroupOffset,
    PartitionOffsets,
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


def test_groups_not_read_stay_unknown_and_old_snapshots_still_load() -> None:
    doc = snapshot_to_dict(_snapshot(None))
    assert doc["groups"] is None
    del doc["groups"], doc["offsets"]  # a snapshot written before groups were read
    old = snapshot_from_dict(doc, "snapshot:old.json")
    assert old.groups is None and old.offsets == ()


@pytest.mark.parametrize("ms, text", [
    (0, "0 s"), (45_000, "45 s"), (60_000, "1 min"), (3_540_000, "59 min"),
    (12_000_000, "3 h 20 min"), (7_200_000, "2 h"), (86_400_000, "1 d"),
    (187_200_000, "2 d 4 h"), (-5, "0 s")])
def test_durations_read_as_an_operator_says_them(ms: int, text: str) -> None:
    assert duration(ms) == text
