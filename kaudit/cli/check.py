"""``kaudit check``: audit cluster and client configs against policies."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from kaudit import __version__
from kaudit.cli import options
from kaudit.cli.ending import written
from kaudit.errors import ExitCode, InputError
from kaudit.report.output import CheckFormat, choose_format, emit, table_width, use_color

if TYPE_CHECKING:
    from kaudit.check.findings import CheckResult


class FailOn(StrEnum):
    """The lowest severity that makes check exit 1."""

    error = "error"
    warning = "warning"
    info = "info"


def exit_code(result: CheckResult, fail_on: FailOn, exit_zero: bool) -> ExitCode:
    """0 unless an unwaived finding is at or above ``fail_on`` (and not --exit-zero)."""
    from kaudit.check.findings import Severity

    if exit_zero:
        return ExitCode.OK
    threshold = Severity(fail_on.value).rank
    failing = any(f.waived_by is None and f.severity.rank >= threshold for f in result.findings)
    return ExitCode.FINDINGS if failing else ExitCode.OK


@options.with_connection
def check(
    paths: Annotated[list[str] | None, typer.Argument(
        metavar="[PATH]...", show_default=False,
        help="Manifest files to check offline, as a pre-commit hook passes them; files "
             "without KafkaTopic resources are skipped.")] = None,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", metavar="FILE|NAME",
        help="Policy file or built-in profile (durable, exactly-once, at-least-once, "
             "best-effort); repeatable, later ones win [default: durable].")] = None,
    snapshot: Annotated[str | None, typer.Option(
        metavar="FILE", help="Audit a `kaudit snapshot` file instead of a live cluster.")] = None,
    manifests: Annotated[list[str] | None, typer.Option(
        metavar="PATH", help="Audit Strimzi KafkaTopic manifests and snapshot files (files "
                             "or directories) before they are applied; repeatable.")] = None,
    producer_config: Annotated[list[str] | None, typer.Option(
        metavar="FILE", help="Producer config (properties or YAML) applied to every audited "
                             "topic; repeatable.")] = None,
    consumer_config: Annotated[list[str] | None, typer.Option(
        metavar="FILE", help="Consumer config (properties or YAML) applied to every audited "
                             "topic; repeatable.")] = None,
    fail_on: Annotated[FailOn, typer.Option(
        case_sensitive=False, help="Exit 1 when a finding is at or above this severity.")
    ] = FailOn.error,
    exit_zero: Annotated[bool, typer.Option(
        "--exit-zero", help="Exit 0 even when findings are at or above --fail-on.")] = False,
    format: Annotated[CheckFormat | None, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="Output format; html is one self-contained page [default: html for "
             "-o FILE.html, table on a terminal, json otherwise].")] = None,
    output: options.Output = None,
    groups: Annotated[bool, typer.Option(
        "--groups/--no-groups",
        help="Also read the consumer groups, the share groups and every partition's "
             "offsets, and audit them (KA6xx): unread records deleted, groups about to lose "
             "data, hanging transactions, share groups that will never deliver records "
             "(KA61x).")] = True,
    wide: Annotated[bool, typer.Option(
        "--wide", help="Tables in one column per field, however wide; by default they fit "
                       "the terminal (COLUMNS, or 100 columns when not a terminal).")] = False,
    connection: options.ConnectionOptions = options.NO_CONNECTION,
) -> int:
    """Audit topics, brokers and clients against policies; state each topic's guarantee."""
    # Everything that can be wrong with the input is found before the cluster is read.
    from kaudit.check.clients import load_client_config
    from kaudit.check.engine import evaluate
    from kaudit.check.policy.loader import load_policies
    from kaudit.report.base import RenderOptions, render
    from kaudit.report.check import CHECK
    from kaudit.report.check.record import summary_line

    if sum(bool(x) for x in (snapshot, manifests, paths)) > 1:
        raise InputError("give one of --snapshot, --manifests or PATH arguments "
                         "(a snapshot file can also be passed to --manifests)")
    policies = load_policies(policy or [])
    producers = [load_client_config(p, "producer") for p in producer_config or []]
    consumers = [load_client_config(c, "consumer") for c in consumer_config or []]

    if manifests or paths:
        from kaudit.cluster.manifests import load_manifests

        cluster_snapshot = (load_manifests(manifests) if manifests
                            else load_manifests(paths or [], allow_empty=True))
    elif snapshot:
        from kaudit.cluster.manifests import load_snapshot_file

        cluster_snapshot = load_snapshot_file(snapshot)
    else:
        from kaudit.cluster.reader import read_snapshot

        settings = connection.settings()
        cluster_snapshot = read_snapshot(settings, groups=groups)

    result = evaluate(cluster_snapshot, policies, producers, consumers)
    fmt = choose_format(format, output, html=True)
    emit(render(CHECK, result, fmt, RenderOptions(
        tool_version=__version__, color=use_color(fmt, output),
        width=None if wide else table_width(output))), output)
    written("check", summary_line(result), output)
    return exit_code(result, fail_on, exit_zero)
