"""The generator follows whatever tree it is given: a future command needs no change to it."""

from __future__ import annotations

import shutil
import subprocess
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import pytest
import typer

from kaudit.docs.commands import command_tree
from kaudit.docs.manpage import command_page, root_page
from kaudit.docs.roff import escape, inline, text_line


class Acks(StrEnum):
    """A choice."""

    zero = "0"
    one = "1"
    all = "all"


def _future_cli() -> typer.Typer:
    """A stand-in for probe: options on the group itself, a nested group, arguments."""
    app = typer.Typer(rich_markup_mode=None)
    probe = typer.Typer(rich_markup_mode=None, invoke_without_command=True)
    matrix = typer.Typer(rich_markup_mode=None)

    @probe.callback()
    def run(acks: Annotated[Acks, typer.Option(help="Producer acks.")] = Acks.all,
            idempotence: Annotated[bool, typer.Option(help="Idempotent producer.")] = True,
            topic: Annotated[str | None, typer.Option(metavar="NAME", help="Topic.")] = None,
            ) -> None:
        """Produce and consume under faults; report what was lost."""

    @matrix.command("run")
    def matrix_run(spec: Annotated[list[str], typer.Argument(help="Cells.")],
                   keep: Annotated[bool, typer.Option("--keep", help="Keep topics.")] = False,
                   ) -> None:
        """Run a matrix of probes."""

    @app.command("check")
    def check() -> None:
        """Check."""

    probe.add_typer(matrix, name="matrix", help="Probe matrices.")
    app.add_typer(probe, name="probe", help="Produce and consume under faults.")
    return app


def test_nested_groups_and_group_options_are_documented(tmp_path: Path) -> None:
    tree = command_tree(_future_cli())
    probe = next(c for c in tree.subcommands if c.path[-1] == "probe")
    page = command_page(probe, tree)
    assert ".SS \"kaudit probe matrix run\"" in page
    for flag in ("--acks", "--idempotence", "--no-idempotence", "--topic", "--keep"):
        assert f"\\fB{escape(flag)}\\fR" in page
    assert "\\fI0|1|all\\fR" in page and "Default: \\fBall\\fR." in page
    assert "\\fISPEC\\fR..." in page
    assert "kaudit\\-probe" in root_page(tree)
    if shutil.which("groff"):
        target = tmp_path / "kaudit-probe.1"
        target.write_text(page)
        lint = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(target)],
                              capture_output=True, text=True, check=False)
        assert lint.stderr == ""


@pytest.mark.parametrize(("text", "roff"), [
    ("a-b", "a\\-b"),
    ("C:\\dir", "C:\\edir"),
    ("it's", "it\\(aqs"),
    ("`x`", "\\(gax\\(ga"),
    ("≥ 3", "\\[u2265] 3"),
    ("~/.config", "\\(ti/.config"),
])
def test_escape(text: str, roff: str) -> None:
    assert escape(text) == roff


def test_text_lines_never_become_requests() -> None:
    assert text_line(".hidden request") == "\\&.hidden request"
    wrapped = text_line("word " * 30 + ".x " + "word " * 30, width=40)
    assert all(not line.startswith((".", "'", " ")) for line in wrapped.splitlines())
    assert all(len(line) <= 40 for line in wrapped.splitlines())


def test_inline_markdown() -> None:
    assert inline("use `--fix` and **always** *check*") == (
        "use \\fB\\-\\-fix\\fR and \\fBalways\\fR \\fIcheck\\fR")
    assert inline("globs like `orders.*` and *.tmp") == (
        "globs like \\fBorders.*\\fR and *.tmp")
    assert inline("see [the policy format](policy.md)") == "see the policy format"
