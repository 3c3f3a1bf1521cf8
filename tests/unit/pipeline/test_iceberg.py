"""An Iceberg table's history read from its metadata tables' rows."""

from __future__ import annotations

from datetime import UTC, datetime

from kaudit.pipeline.causes import Snapshot
from kaudit.pipeline.iceberg import added_by, file_adders, history, removed_by, snapshots

ROWS = [
    {"committed_at": datetime(2026, 11, 29, 8, 0, 1, tzinfo=UTC), "snapshot_id": 7,
     "operation": "append", "summary": {"kafka.connect.commit-id": "c-b", "added-records": "3",
                                        "kafka.connect.valid-through-ts": "1795939200500"}},
    {"committed_at": datetime(2026, 11, 29, 8, 0, 0, tzinfo=UTC), "snapshot_id": 5,
     "operation": "append", "summary": {"kafka.connect.commit-id": "c-a"}},
    {"committed_at": 1_795_939_202_000, "snapshot_id": 9, "operation": "delete",
     "summary": None},
]
FOUND = snapshots(ROWS)
S5, S7, S9 = FOUND[5], FOUND[7], FOUND[9]


def test_snapshots_carry_their_time_operation_and_the_sinks_commit_id() -> None:
    assert tuple(FOUND[i] for i in (5, 7, 9)) == (Snapshot(5, 1_795_939_200_000, "append", "c-a"),
                            Snapshot(7, 1_795_939_201_000, "append", "c-b",
                                     "1795939200500"),
                            Snapshot(9, 1_795_939_202_000, "delete", None))
    assert history(FOUND) == [S5, S7, S9]
    assert S7.says() == ("snapshot 7 (append) at 1795939201000 ms, commit id c-b, valid "
                         "through 1795939200500")


def entry(status: int, snapshot: int, path: str) -> dict[str, object]:
    return {"status": status, "snapshot_id": snapshot, "data_file": {"file_path": path}}


def test_a_file_committed_twice_has_both_adders_and_its_rows_name_both() -> None:
    adders = file_adders([entry(1, 7, "b.parquet"), entry(1, 5, "a.parquet"),
                          entry(0, 7, "a.parquet"),  # still there: not an addition
                          entry(1, 7, "a.parquet"),  # committed again (iceberg#16282)
                          entry(2, 9, "b.parquet"), entry(1, 99, "c.parquet")], FOUND)
    assert adders == {"a.parquet": (S5, S7), "b.parquet": (S7,)}
    rows = [("k1", "a.parquet"), ("k1", "a.parquet"), ("k2", "b.parquet"),
            ("k3", "a.parquet"), ("k3", "b.parquet"), ("k4", "gone.parquet")]
    assert added_by(rows, adders) == {"k1": (S5, S7), "k2": (S7,), "k3": (S5, S7, S7)}


def test_a_key_gone_now_was_removed_by_the_snapshot_after_the_last_that_had_it() -> None:
    chain = history(FOUND)
    assert removed_by({"k1": 5, "k2": 7, "k3": 9, "k4": 123}, chain) == {"k1": S7, "k2": S9}
