"""The user guide (``docs/``, built with Sphinx) and README.md: the guide builds in strict
mode, every command and option is on its command's page, README stays short and links only
to pages that exist, and every example uses real commands and options.

CONVENTION (the pages follow it; this test enforces it):

1. A *usage block* (optional) is a fenced code block (```` ```console ```` or
   ```` ```text ````) whose first line is ``$ kaudit [COMMAND [SUBCOMMAND]] --help``.
   Everything after that line must be exactly what the command prints for ``--help`` at 80
   columns (trailing spaces aside). Refresh them with ``python -m tests.unit.test_guide
   --fix``. The command pages need none: each includes its option reference, generated with
   the man pages (``python -m kaudit.docs``).
2. Every ``kaudit ...`` command line in the pages' shell examples (```` ```console ````
   lines starting with ``$ ``, and ```` ```sh ```` lines) names a real command and only
   options that command has.
3. The exit-code table lists the codes of :class:`kaudit.errors.ExitCode` (70, "a bug in
   kaudit", may be left out).
"""

from __future__ import annotations

import difflib
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from kaudit.docs.commands import CommandDoc, command_tree
from kaudit.errors import ExitCode
from tests.conftest import run_in_process

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
EXIT_CODES_PAGE = DOCS / "exit-codes-and-output.md"
README_MAX_LINES = 300
HELP_WIDTH = "80"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
USAGE_LINE = re.compile(r"^\$ (kaudit(?: [a-z][\w-]*)*) --help[ \t]*$")
@dataclass(frozen=True)
class Block:
    """A fenced code block of a page."""

    lang: str
    body: str
    line: int
    """Line number of the opening fence."""
    start: int
    """Character offset of the body in the page."""


def blocks(text: str) -> list[Block]:
    """Every fenced code block, in order."""
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, m.start(2))
            for m in FENCE.finditer(text)]


def usage_blocks(text: str, name: str) -> dict[str, Block]:
    """Usage blocks by command (``"kaudit check"``); a command given twice is an error."""
    found: dict[str, Block] = {}
    for block in blocks(text):
        first = block.body.split("\n", 1)[0]
        m = USAGE_LINE.match(first)
        if block.lang in ("console", "text", "") and m:
            assert m.group(1) not in found, (
                f"{name}:{block.line}: a second usage block for {m.group(1)}")
            found[m.group(1)] = block
    return found


def tidy(text: str) -> str:
    """Trailing spaces and blank lines removed: Markdown editors strip them."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


@cache
def help_text(command: str) -> str:
    """``COMMAND --help`` as the entry point prints it, 80 columns wide (run in this
    process: what is compared is the text, not the process that prints it)."""
    result = run_in_process(*command.split()[1:], "--help",
                            env={"COLUMNS": HELP_WIDTH, "NO_COLOR": "1", "TERM": "dumb"})
    assert result.code == 0, result.stderr
    return tidy(result.stdout)


TREE = command_tree()
COMMANDS = {c.name: c for c in TREE.walk()}
TOP = [c for c in TREE.subcommands]


def pages() -> dict[str, str]:
    """README.md and every page of the guide written by hand, by their path in the checkout."""
    from tests.guide_examples import pages as paths

    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in paths()}


def body_after_usage_line(block: Block) -> str:
    return tidy(block.body.split("\n", 1)[1] if "\n" in block.body else "")


def mismatch(command: str, block: Block, name: str) -> str:
    diff = difflib.unified_diff(body_after_usage_line(block).splitlines(),
                                help_text(command).splitlines(),
                                f"{name}:{block.line}", f"{command} --help", lineterm="")
    return (f"{name}:{block.line}: the usage block for `{command}` differs from its "
            "--help (run `python -m tests.unit.test_guide --fix`):\n" + "\n".join(diff))


def test_usage_blocks_are_real_commands_and_match() -> None:
    for name, text in pages().items():
        for command, block in usage_blocks(text, name).items():
            assert command in COMMANDS, f"{name}:{block.line}: `{command}` is not a command"
            assert body_after_usage_line(block) == help_text(command), mismatch(
                command, block, name)


# -- rule 2: example command lines ------------------------------------------------------------


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command) for every shell command line of a page's examples."""
    out = []
    for block in blocks(text):
        if block.lang not in ("console", "sh", "shell", "bash"):
            continue
        lines = block.body.splitlines()
        i = 0
        while i < len(lines):
            number, line = block.line + 1 + i, lines[i]
            while line.endswith("\\") and i + 1 < len(lines):  # continuation lines
                i += 1
                line = line[:-1] + " " + lines[i].strip()
            i += 1
            if block.lang == "console":
                if not line.startswith("$ "):
                    continue  # output
                line = line[2:]
            out.append((number, line))
    return out


def kaudit_invocations(line: str) -> list[list[str]]:
    """The argument lists of each ``kaudit`` command in a shell line (pipes, &&, $(...))."""
    line = re.sub(r"\"?\$\(([^)]*)\)\"?", lambda m: " ; " + m.group(1) + " ; ", line)
    try:
        words = shlex.split(line, comments=True)
    except ValueError as exc:
        raise AssertionError(f"cannot parse shell line {line!r}: {exc}") from None
    runs: list[list[str]] = []
    current: list[str] | None = None
    for word in words:
        if word in ("|", "||", "&&", ";") or word.startswith((">", "<")):
            current = None
            continue
        stripped = word.strip('"').strip(";")
        if current is None:
            if stripped == "kaudit":
                current = []
                runs.append(current)
            continue
        current.append(word)
    return runs


def resolve(args: list[str]) -> tuple[CommandDoc, list[str]]:
    """The command named by the leading words of ``args``, and the words after it."""
    node = TREE
    rest = list(args)
    while rest and not rest[0].startswith("-"):
        sub = next((s for s in node.subcommands if s.path[-1] == rest[0]), None)
        if sub is None:
            break
        node, rest = sub, rest[1:]
    return node, rest


def known_flags(command: CommandDoc) -> set[str]:
    flags = {"--help", "-h"}
    for option in command.options:
        flags.update(option.names)
        flags.update(option.negations)
    return flags


def test_the_examples_use_real_commands_and_options() -> None:
    problems = []
    for name, number, line in ((name, number, line) for name, text in pages().items()
                               for number, line in command_lines(text)):
        for args in kaudit_invocations(line):
            command, rest = resolve(args)
            if command.is_group and rest and not rest[0].startswith("-"):
                problems.append(f"{name}:{number}: `{command.name} {rest[0]}` is not a "
                                "command")
                continue
            flags = known_flags(command)
            for word in rest:
                if not word.startswith("-") or word == "-":
                    continue
                flag = word.split("=", 1)[0]
                if flag.startswith("--") or len(flag) == 2:
                    if flag not in flags:
                        problems.append(f"{name}:{number}: `{command.name}` has no "
                                        f"option {flag}")
                elif flag[:2] in flags and set(flag[1:]) == {flag[1]}:  # -vv
                    continue
                else:
                    problems.append(f"{name}:{number}: `{command.name}`: unknown {flag}")
    assert not problems, "\n".join(problems)


def test_the_example_checker_catches_a_wrong_option() -> None:
    """The checker above is not vacuous: a renamed option or command is caught."""
    command, rest = resolve(["check", "--polcy", "durable"])
    assert rest == ["--polcy", "durable"]
    assert command.name == "kaudit check" and "--polcy" not in known_flags(command)
    assert kaudit_invocations('eval "$(kaudit lab env)" && kaudit cluster | head') == [
        ["lab", "env"], ["cluster"]]
    assert resolve(["lab", "kill", "2", "--signal", "STOP"])[0].name == "kaudit lab kill"


# -- rule 3: exit codes ------------------------------------------------------------------------


def test_exit_code_table_matches_the_exit_codes() -> None:
    text = EXIT_CODES_PAGE.read_text(encoding="utf-8")
    section = re.search(r"^#+ Exit codes\s*\n(.*?)(?=^#)", text + "\n#", re.MULTILINE | re.DOTALL)
    assert section, f"{EXIT_CODES_PAGE.name} has no 'Exit codes' section"
    codes = {int(m.group(1)) for m in re.finditer(r"^\|\s*(\d+)\s*\|", section.group(1),
                                                   re.MULTILINE)}
    expected = {int(c) for c in ExitCode}
    assert codes <= expected, f"codes kaudit never uses: {sorted(codes - expected)}"
    assert expected - codes <= {int(ExitCode.INTERNAL)}, (
        f"codes missing from {EXIT_CODES_PAGE.name}: "
        f"{sorted(expected - codes - {ExitCode.INTERNAL})}")


# -- README and the built guide ----------------------------------------------------------------


def test_readme_is_short_and_links_only_to_files_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < README_MAX_LINES
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert local, "README links into the guide"
    assert [link for link in local if not (ROOT / link).is_file()] == []


def test_every_command_page_includes_its_generated_option_reference() -> None:
    from kaudit.docs.options_page import reference_path

    for command in TOP:
        page = DOCS / "commands" / f"{command.path[-1]}.md"
        assert page.is_file(), f"no page for `{command.name}`"
        include = f"```{{include}} ../{reference_path(command).removeprefix('docs/')}"
        assert include in page.read_text(encoding="utf-8"), f"{page} lacks {include}"


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The guide built as CI builds it: warnings are errors (a broken link, a page left out
    of the navigation, a missing include), so a build that passes has none."""
    out = tmp_path_factory.mktemp("guide")
    built = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                            "html", str(DOCS), str(out)], capture_output=True, text=True,
                           timeout=600, stdin=subprocess.DEVNULL)
    assert built.returncode == 0, built.stderr
    return out


def test_the_guide_builds_in_strict_mode_with_every_page_and_a_search(guide: Path) -> None:
    from tests.guide_examples import pages as paths

    for page in paths()[1:]:  # README.md is not a page of the guide
        html = guide / page.relative_to(DOCS).with_suffix(".html")
        assert html.is_file(), f"{page} was not built"
    assert (guide / "search.html").is_file() and (guide / "searchindex.js").is_file()


@pytest.mark.parametrize("command", [c.name for c in TOP])
def test_every_command_and_option_is_on_its_page(guide: Path, command: str) -> None:
    import html

    top = COMMANDS[command]
    text = html.unescape((guide / "commands" / f"{top.path[-1]}.html").read_text())
    # An option named in prose is still two hyphens, never typeset as a dash.
    assert not re.findall(r".{20}\u2013[a-z].{10}", text)
    for each in top.walk():
        assert each.name in text, f"`{each.name}` is not on its page"
        for option in each.options:
            for flag in option.flags:
                assert f">{flag}<" in text, f"`{each.name} {flag}` is not on its page"


# -- the fixer ---------------------------------------------------------------------------------


def fix(text: str, name: str) -> tuple[str, list[str]]:
    """Rewrite every usage block's body to the real --help; returns the text and commands."""
    changed = []
    for command, block in sorted(usage_blocks(text, name).items(),
                                 key=lambda kv: -kv[1].start):
        if command not in COMMANDS:
            continue
        first = block.body.split("\n", 1)[0]
        new_body = f"{first}\n{help_text(command)}\n"
        if block.body != new_body:
            text = text[:block.start] + new_body + text[block.start + len(block.body):]
            changed.append(command)
    return text, changed


if __name__ == "__main__":
    if sys.argv[1:] != ["--fix"]:
        sys.exit("usage: python -m tests.unit.test_guide --fix")
    for name, text in pages().items():
        new_text, commands = fix(text, name)
        if commands:
            (ROOT / name).write_text(new_text, encoding="utf-8")
            print(f"{name}: refreshed {len(commands)} usage block(s): {', '.join(commands)}")
