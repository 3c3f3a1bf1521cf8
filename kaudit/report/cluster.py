"""Render ``kaudit cluster`` (``kaudit.cluster/v1``) and ``kaudit snapshot``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from kaudit.cluster.info import ClusterInfo
from kaudit.cluster.model import ClusterSnapshot, snapshot_to_dict
from kaudit.report.base import Report, text_only

SCHEMA = "kaudit.cluster/v1"


def cluster_document(info: ClusterInfo) -> dict[str, Any]:
    """The ``kaudit.cluster/v1`` JSON document."""
    return {
        "schema": SCHEMA,
        "cluster_id": info.cluster_id,
        "controller_id": info.controller_id,
        "topic_count": info.topic_count,
        "internal_topic_count": info.internal_topic_count,
        "brokers": [asdict(b) for b in info.brokers],
        "features": None if info.features is None else dict(sorted(info.features.items())),
        "features_unread": info.features_unread,
    }


def cluster_table(info: ClusterInfo) -> str:
    """Human-readable rendering of :class:`ClusterInfo`."""
    head = tabulate(
        [
            ("cluster id", info.cluster_id or "-"),
            ("controller", info.controller_id if info.controller_id is not None else "-"),
            ("brokers", len(info.brokers)),
            ("topics", f"{info.topic_count} ({info.internal_topic_count} internal)"),
            *([(f"feature {k}", v) for k, v in sorted(info.features.items())]
              if info.features is not None
              else [("features", f"not read: {info.features_unread}")]),
        ],
        tablefmt="plain",
    )
    brokers = tabulate(
        [(b.id, b.host, b.port, b.rack or "-") for b in info.brokers],
        headers=["broker", "host", "port", "rack"],
        tablefmt="simple",
    )
    return f"{head}\n\n{brokers}\n"


CLUSTER: Report[ClusterInfo] = Report(name="cluster", document=cluster_document,
                                      renderers={"table": text_only(cluster_table)})
"""The ``kaudit cluster`` report."""

SNAPSHOT: Report[ClusterSnapshot] = Report(name="snapshot", document=snapshot_to_dict)
"""``kaudit snapshot``: JSON only, the file ``check --snapshot`` reads back."""
