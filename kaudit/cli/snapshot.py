"""``kaudit snapshot``: the cluster's metadata and configs as JSON, for offline checks."""

from __future__ import annotations

from kaudit.cli import options
from kaudit.cluster.reader import read_snapshot
from kaudit.report.base import render
from kaudit.report.cluster import SNAPSHOT
from kaudit.report.output import emit


def snapshot(
    bootstrap_server: options.BootstrapServer = None,
    command_config: options.CommandConfig = None,
    property: options.Property = None,
    context: options.Context = None,
    timeout: options.Timeout = None,
    output: options.Output = None,
) -> None:
    """Write brokers, configs (with their sources), topics and partitions as JSON."""
    settings = options.connection(bootstrap_server, command_config, property, context, timeout)
    emit(render(SNAPSHOT, read_snapshot(settings), "json"), output)
