"""``kaudit cluster``: a read-only first look at a cluster."""

from __future__ import annotations

from kaudit.cli import options
from kaudit.cluster.info import read_cluster_info
from kaudit.report.base import render
from kaudit.report.cluster import CLUSTER
from kaudit.report.output import choose_format, emit


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
    emit(render(CLUSTER, info, choose_format(format)), output)
