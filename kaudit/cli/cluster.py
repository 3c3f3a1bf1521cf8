"""``kaudit cluster``: a read-only first look at a cluster."""

from __future__ import annotations

from kaudit.cli import options
from kaudit.errors import ExitCode
from kaudit.report.output import choose_format, emit


@options.with_connection
def cluster(
    connection: options.ConnectionOptions = options.NO_CONNECTION,
    format: options.Format = None,
    output: options.Output = None,
) -> int:
    """Show cluster id, controller, brokers (id, host, rack) and topic count."""
    from kaudit.cluster.info import read_cluster_info
    from kaudit.report.base import render
    from kaudit.report.cluster import CLUSTER

    settings = connection.settings()
    info = read_cluster_info(settings)
    emit(render(CLUSTER, info, choose_format(format)), output)
    return ExitCode.OK
