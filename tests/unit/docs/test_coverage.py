"""Every command, option, exit code, environment variable and rule is in the docs."""

from __future__ import annotations

import re
from typing import Any

import pytest
import typer.main

from kaudit.check.rules import all_rules
from kaudit.cli.app import app
from kaudit.cli.clicompat import Group, Option
from kaudit.cli.options import CONNECTION
from kaudit.docs.roff import escape
from kaudit.docs.rules_reference import FAMILIES, SECTIONS
from kaudit.errors import ExitCode
from kaudit.report.check.record import rule_help_uri
from tests.unit.docs.roffpage import MAN, ROOT, section, subsection


def _commands() -> list[tuple[tuple[str, ...], Any, Any]]:
    """(path, command, context) for every command of the real CLI, read from click."""
    root = typer.main.get_command(app)
    out: list[tuple[tuple[str, ...], Any, Any]] = []

    def walk(command: Any, path: tuple[str, ...], parent: Any) -> None:
        ctx = command.context_class(command, info_name=path[-1], parent=parent,
                                    **command.context_settings)
        out.append((path, command, ctx))
        if isinstance(command, Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, (*path, name), ctx)

    walk(root, ("kaudit",), None)
    return out


COMMANDS = _commands()


def _page_of(path: tuple[str, ...]) -> str:
    return (MAN / f"{'-'.join(path[:2])}.1").read_text(encoding="utf-8")


def _where(path: tuple[str, ...]) -> str:
    """The part of the page that documents this command's own options."""
    page = _page_of(path)
    if len(path) <= 2:
        return section(page, "OPTIONS")
    return subsection(page, escape(" ".join(path)))


@pytest.mark.parametrize("path", [p for p, _, _ in COMMANDS if len(p) == 2],
                         ids=lambda p: " ".join(p))
def test_every_top_level_command_has_a_page(path: tuple[str, ...]) -> None:
    page = _page_of(path)
    assert escape("-".join(path)) in section(page, "NAME")
    for title in ("SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
        assert section(page, title).strip(), f"{'-'.join(path)}.1 has no {title}"
    assert f"\\fB{escape(path[1])}\\fR" in section(
        (MAN / "kaudit.1").read_text(), "COMMANDS"), "kaudit.1 does not list the command"


@pytest.mark.parametrize("path", [p for p, _, _ in COMMANDS if len(p) > 2],
                         ids=lambda p: " ".join(p))
def test_every_subcommand_has_a_section(path: tuple[str, ...]) -> None:
    text = _where(path)
    assert text.strip(), f"no .SS {' '.join(path)} in {'-'.join(path[:2])}.1"
    assert f"\\fB{escape(' '.join(path))}\\fR" in section(_page_of(path), "SYNOPSIS")


@pytest.mark.parametrize(("path", "command", "ctx"), COMMANDS,
                         ids=[" ".join(p) for p, _, _ in COMMANDS])
def test_every_option_is_documented_where_its_command_is(path: tuple[str, ...], command: Any,
                                                         ctx: Any) -> None:
    text = _where(path)
    for param in command.get_params(ctx):
        if param.hidden:
            continue
        if isinstance(param, Option):
            for flag in [*param.opts, *param.secondary_opts]:
                assert f"\\fB{escape(flag)}\\fR" in text, f"{' '.join(path)} {flag}"
            if param.metavar:
                assert escape(param.metavar) in text, f"{' '.join(path)} {param.metavar}"
            plain_words = [w for w in (param.help or "").split() if w.isalpha()][:4]
            for word in plain_words:
                assert word in text, f"{' '.join(path)} {param.opts[-1]}: help text missing"
        else:  # an argument, under the command's ARGUMENTS or in its subsection
            name = (param.metavar or param.name).replace("...", "").strip("[]").upper()
            where = text if len(path) > 2 else section(_page_of(path), "ARGUMENTS")
            assert f"\\fI{escape(name)}\\fR" in where, f"{' '.join(path)} {name}"


def test_connection_options_are_in_the_overview() -> None:
    overview = section((MAN / "kaudit.1").read_text(), "CONNECTION OPTIONS")
    for _, command, ctx in COMMANDS:
        for param in command.get_params(ctx):
            if isinstance(param, Option) and param.rich_help_panel == CONNECTION:
                assert f"\\fB{escape(param.opts[-1])}\\fR" in overview


@pytest.mark.parametrize("page", sorted(MAN.glob("kaudit*.1")), ids=lambda p: p.name)
def test_every_exit_code_is_explained(page: Any) -> None:
    status = section(page.read_text(), "EXIT STATUS")
    for code in ExitCode:
        assert f"\\fB{int(code)}\\fR" in status


def test_every_environment_variable_kaudit_reads_is_documented() -> None:
    environment = section((MAN / "kaudit.1").read_text(), "ENVIRONMENT")
    read = set()
    for source in (ROOT / "kaudit").rglob("*.py"):
        if "docs" in source.relative_to(ROOT / "kaudit").parts:
            continue
        text = source.read_text(encoding="utf-8")
        read |= set(re.findall(r"environ(?:\.get)?[(\[]\s*\"([A-Z][A-Z0-9_]+)\"", text))
        read |= set(re.findall(r"\"(KAUDIT_[A-Z0-9_]+)\"", text))
    promised = {"KAUDIT_BOOTSTRAP_SERVERS", "KAUDIT_COMMAND_CONFIG", "KAUDIT_CONFIG",
                "KAUDIT_LAB_DIR", "KAUDIT_CACHE_DIR", "NO_COLOR", "CI"}
    for name in sorted(read | promised):
        assert escape(name) in environment, f"{name} is not in kaudit(1) ENVIRONMENT"
    assert "config.yaml" in section((MAN / "kaudit.1").read_text(), "FILES")


# The rule reference -------------------------------------------------------------------

RULES = all_rules()
RULES_MD = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
RULES_7 = (MAN / "kaudit-rules.7").read_text(encoding="utf-8")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_has_the_anchor_sarif_links_to(rule: Any) -> None:
    fragment = rule_help_uri(rule.id).rsplit("#", 1)[1]
    assert fragment == rule.id.lower()
    lines = RULES_MD.splitlines()
    at = lines.index(f'<a id="{fragment}"></a>')
    heading = next(line for line in lines[at + 1:] if line.strip())
    assert heading == f"## {rule.id} `{rule.name}`"
    assert f"[{rule.id}](#{fragment})" in RULES_MD
    assert rule_help_uri(rule.id).split("/blob/main/", 1)[1].startswith("docs/rules.md#")


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_rule_is_in_the_man_page_with_its_template(rule: Any) -> None:
    text = subsection(RULES_7, escape(f"{rule.id} {rule.name}"))
    assert text, f"no .SS for {rule.id} in kaudit-rules.7"
    assert f"\\fB{rule.severity}\\fR" in text
    for _, heading in SECTIONS:
        assert f"\\fB{escape(heading)}\\fR" in text
    assert rule.id[:3] in FAMILIES, f"{rule.id}: add its family to rules_reference.FAMILIES"


def test_policy_doc_lists_every_rule_as_registered() -> None:
    # kaudit-policy.5 is converted from docs/policy.md, whose rules table is kept by hand.
    policy = (ROOT / "docs" / "policy.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| (KA\d{3}) \| ([\w.-]+) \| (\w+) \|$", policy, re.M))
    assert table == {(r.id, r.name, str(r.severity)) for r in RULES}
