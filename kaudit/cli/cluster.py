"""``kaudit cluster``: a read-only first look at a cluster."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tabulate import tabulate

from kaudit.cli import options
from kaudit.cluster.info import ClusterInfo, read_cluster_info
from kaudit.report.output import OutputFormat, default_format, emit, to_json


def cluster_document(info: ClusterInfo) -> dict[str, Any]:
    """The ``kaudit.cluster/v1`` JSON document."""
    return {
        "schema": "kaudit.cluster/v1",
        "cluster_id": info.cluster_id,
        "controller_id": info.controller_id,
        "topic_count": info.topic_count,
        "internal_topic_count": info.internal_topic_count,
        "brokers": [asdict(b) for b in info.brokers],
    }


def cluster_table(info: ClusterInfo) -> str:
    """Human-readable rendering of :class:`ClusterInfo`."""
    head = tabulate(
        [
            ("cluster id", info.cluster_id or "-"),
            ("controller", info.controller_id if info.controller_id is not None else "-"),
            ("brokers", len(info.brokers)),
            ("topics", f"{info.topic_count} ({info.internal_topic_count} internal)"),
        ],
        tablefmt="plain",
    )
    brokers = tabulate(
        [(b.id, b.host, b.port, b.rack or "-") for b in info.brokers],
        headers=["broker", "host", "port", "rack"],
        tablefmt="simple",
    )
    return f"{head}\n\n{brokers}\n"


def cluster(
    bootstrap_server: options.BootstrapServer = None,
    command_config: options.CommandConfig = None,
    property: options.Property = None,
    context: options.Context = None,
    timeout: options.Timeout = None,
    format: options.Format = None,
    output: options.Output = None,
) -> None:
    """Show cluster id, controller, brokers (id, host, rack) and topic count."""
    settings = options.connection(bootstrap_server, command_config, property, context, timeout)
    info = read_cluster_info(settings)
    fmt = default_format(format)
    emit(
        to_json(cluster_document(info)) if fmt is OutputFormat.json else cluster_table(info), output
    )
