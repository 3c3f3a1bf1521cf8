"""What an Iceberg table's history says of its rows, from its metadata tables' rows (pure):
its snapshots (``TABLE.snapshots``), the snapshot that added each data file
(``TABLE.all_entries``), so which snapshots wrote each key's rows, and which snapshot removed
a row an earlier one had."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any

from kaudit.pipeline.causes import Snapshot

COMMIT_ID = "kafka.connect.commit-id"
VALID_THROUGH = "kafka.connect.valid-through-ts"
"""The summary property Iceberg's Kafka Connect sink sets on each snapshot it commits."""
ADDED = 1
"""``all_entries.status`` of a file a snapshot added (0: existing, 2: deleted)."""


def snapshots(rows: Iterable[Mapping[str, Any]]) -> dict[int, Snapshot]:
    """``TABLE.snapshots``' rows (committed_at, snapshot_id, operation, summary) by id."""
    found = {}
    for row in rows:
        committed = row["committed_at"]
        at_ms = (int(committed.timestamp() * 1000) if isinstance(committed, datetime)
                 else int(committed))
        summary = row.get("summary") or {}
        found[int(row["snapshot_id"])] = Snapshot(int(row["snapshot_id"]), at_ms,
                                                  str(row.get("operation") or "unknown"),
                                                  summary.get(COMMIT_ID),
                                                  summary.get(VALID_THROUGH))
    return found


def history(found: Mapping[int, Snapshot]) -> list[Snapshot]:
    """The snapshots in commit order."""
    return _in_order(found.values())


def file_adders(entries: Iterable[Mapping[str, Any]], found: Mapping[int, Snapshot]
                ) -> dict[str, tuple[Snapshot, ...]]:
    """Each data file's path -> the snapshots that added it, in commit order, from
    ``TABLE.all_entries``' rows (status, snapshot_id, data_file.file_path). A file added
    by two snapshots (the same path committed again) is read twice: its rows are in the
    table twice."""
    adders: dict[str, set[Snapshot]] = {}
    for entry in entries:
        snapshot = found.get(int(entry["snapshot_id"]))
        if entry["status"] == ADDED and snapshot is not None:
            adders.setdefault(str(entry["data_file"]["file_path"]), set()).add(snapshot)
    return {path: tuple(_in_order(s)) for path, s in adders.items()}


def _in_order(found: Iterable[Snapshot]) -> list[Snapshot]:
    return sorted(found, key=lambda s: (s.committed_at_ms, s.snapshot_id))


def added_by(rows: Iterable[tuple[str, str]], adders: Mapping[str, tuple[Snapshot, ...]]
             ) -> dict[str, tuple[Snapshot, ...]]:
    """Per key, the snapshots that added its rows now in the table, from each row's key
    and ``_file``: each distinct file's adders (a file added twice, twice), in commit
    order. A file whose entries have expired adds nothing."""
    files: dict[str, set[str]] = {}
    for key, path in rows:
        files.setdefault(key, set()).add(path)
    found = {key: _in_order([s for path in paths for s in adders.get(path, ())])
             for key, paths in files.items()}
    return {key: tuple(s) for key, s in found.items() if s}


def removed_by(last_seen: Mapping[str, int], chain: Sequence[Snapshot]
               ) -> dict[str, Snapshot]:
    """Per key absent now, the snapshot that removed it: the one after the last snapshot
    (``last_seen``: its id) whose rows held the key, in the table's ``chain`` (commit
    order). A key last seen in the current snapshot, or in one not in the chain, has none."""
    after = {earlier.snapshot_id: later for earlier, later in pairwise(chain)}
    return {key: after[seen] for key, seen in last_seen.items() if seen in after}
