"""What an Iceberg sink's history says of the rows reconcile flagged, read with Spark from
the table's metadata tables (``snapshots``, ``all_entries``), its rows' ``_file`` and its
earlier snapshots (time travel); parsed by :mod:`kaudit.pipeline.iceberg`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kaudit.pipeline.causes import Snapshot
from kaudit.pipeline.iceberg import added_by, file_adders, history, removed_by, snapshots
from kaudit.reconcile.formats.base import joined_key
from kaudit.reconcile.request import ReconcileRequest
from kaudit.reconcile.sinks import SinkSpec, quoted

EARLIER_SNAPSHOTS = 50
"""Earlier snapshots searched (newest first) for the rows of keys missing now."""
KEYS_LOOKED_UP = 10_000
"""Keys whose rows are looked up in the table's history, at most."""


@dataclass(frozen=True)
class TableHistory:
    """Per key, the snapshots that added its rows now in the table, and the snapshot that
    removed the row an earlier one had."""

    added_by: Mapping[str, tuple[Snapshot, ...]]
    removed_by: Mapping[str, Snapshot]


def table_history(spark: Any, sink: SinkSpec, request: ReconcileRequest,
                  present: set[str], absent: set[str]) -> TableHistory:
    """The history of the ``present`` keys' rows (duplicated, extra) and of the ``absent``
    ones' (missing), in the table read at the run's pinned snapshot."""
    from pyspark.sql import functions as F

    table = quoted(sink.location)
    found = snapshots(r.asDict(recursive=True) for r in spark.sql(
        f"SELECT committed_at, snapshot_id, operation, summary FROM {table}.snapshots"
    ).collect())
    entries = spark.sql(f"SELECT status, snapshot_id, data_file.file_path AS path FROM "
                        f"{table}.all_entries WHERE data_file.content = 0").collect()
    adders = file_adders(({"status": e["status"], "snapshot_id": e["snapshot_id"],
                           "data_file": {"file_path": e["path"]}} for e in entries), found)
    key = joined_key([F.col(c).cast("string") for c in request.sink_key_columns()])

    def keys_at(snapshot: int | None, wanted: set[str], *columns: Any) -> list[Any]:
        at = "" if snapshot is None else f" VERSION AS OF {snapshot}"
        rows = spark.sql(f"SELECT *, _file FROM {table}{at}").select(key.alias("k"), *columns)
        return list(rows.where(F.col("k").isin(*sorted(wanted)[:KEYS_LOOKED_UP])).collect())

    rows = [(r["k"], r["_file"]) for r in keys_at(sink.snapshot_id, present, "_file")] \
        if present else []
    chain = [s for s in history(found)
             if sink.snapshot_id is None or s.committed_at_ms
             <= found.get(sink.snapshot_id, s).committed_at_ms]
    last_seen: dict[str, int] = {}
    for earlier in reversed(chain[:-1][-EARLIER_SNAPSHOTS:]):
        left = absent - set(last_seen)
        if not left:
            break
        for r in keys_at(earlier.snapshot_id, left):
            last_seen.setdefault(r["k"], earlier.snapshot_id)
    return TableHistory(added_by(rows, adders), removed_by(last_seen, chain))
