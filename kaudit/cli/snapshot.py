"""``kaudit snapshot``: the cluster's metadata and configs as JSON, for offline checks."""

from __future__ import annotations

from typing import Annotated

import typer

from kaudit.cli import options
from kaudit.errors import ExitCode
from kaudit.report.output import emit


@options.with_connection
def snapshot(
    connection: options.ConnectionOptions = options.NO_CONNECTION,
    output: options.Output = None,
    groups: Annotated[bool, typer.Option(
        "--groups/--no-groups",
        help="Also write the consumer groups, the share groups and every partition's "
             "offsets, for `kaudit check --snapshot`.")] = True,
) -> int:
    """Write brokers, configs (with their sources), topics and partitions as JSON."""
    from kaudit.cluster.reader import read_snapshot
    from kaudit.report.base import render
    from kaudit.report.cluster import SNAPSHOT

    settings = connection.settings()
    emit(render(SNAPSHOT, read_snapshot(settings, groups=groups), "json"), output)
    return ExitCode.OK
