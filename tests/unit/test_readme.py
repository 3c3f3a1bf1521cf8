"""README.md's usage text is the CLI's real ``--help``; its examples use real options.

CONVENTION (README.md follows it; this test enforces it):

1. A *usage block* is a fenced code block (```` ```console ```` or ```` ```text ````)
   whose first line is ``$ kaudit [COMMAND [SUBCOMMAND]] --help``. Everything after that
   line must be exactly what the command prints for ``--help`` at 80 columns (trailing
   spaces aside). Refresh them all with ``python -m tests.unit.test_readme --fix``.
2. ``kaudit`` itself and every top-level command (``kaudit check``, ``kaudit lab``...)
   must have a usage block; deeper ones (``kaudit probe matrix``) may have one.
3. Every ``kaudit ...`` command line in the README's shell examples (```` ```console ````
   lines starting with ``$ ``, and ```` ```sh ```` lines) names a real command and only
   options that command has.
4. The exit-code table lists the codes of :class:`kaudit.errors.ExitCode` (70, "a bug in
   kaudit", may be left out).

PENDING (issue 7): until README.md has its usage section, the usage-block tests are
skipped with a reason that says so. Once any usage block is in the README, all of rule 2
is enforced.
"""

from __future__ import annotations

import difflib
import re
import shlex
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
HELP_WIDTH = "80"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
USAGE_LINE = re.compile(r"^\$ (kaudit(?: [a-z][\w-]*)*) --help[ \t]*$")
PENDING = ("PENDING README PASTE (issue 7): README.md has no `$ kaudit ... --help` usage "
           "blocks yet; see this module's docstring for the convention")


@dataclass(frozen=True)
class Block:
    """A fenced code block of the README."""

    lang: str
    body: str
    line: int
    """Line number of the opening fence."""
    start: int
    """Character offset of the body in the README."""


def blocks(text: str) -> list[Block]:
    """Every fenced code block, in order."""
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, m.start(2))
            for m in FENCE.finditer(text)]


def usage_blocks(text: str) -> dict[str, Block]:
    """Usage blocks by command (``"kaudit check"``); a command given twice is an error."""
    found: dict[str, Block] = {}
    for block in blocks(text):
        first = block.body.split("\n", 1)[0]
        m = USAGE_LINE.match(first)
        if block.lang in ("console", "text", "") and m:
            assert m.group(1) not in found, (
                f"README.md:{block.line}: a second usage block for {m.group(1)}")
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
REQUIRED = [c.name for c in TREE.walk() if len(c.path) <= 2]


def readme() -> str:
    return README.read_text(encoding="utf-8")


def body_after_usage_line(block: Block) -> str:
    return tidy(block.body.split("\n", 1)[1] if "\n" in block.body else "")


def mismatch(command: str, block: Block) -> str:
    diff = difflib.unified_diff(body_after_usage_line(block).splitlines(),
                                help_text(command).splitlines(),
                                f"README.md:{block.line}", f"{command} --help", lineterm="")
    return (f"README.md:{block.line}: the usage block for `{command}` differs from its "
            "--help (run `python -m tests.unit.test_readme --fix`):\n" + "\n".join(diff))


@pytest.mark.parametrize("command", REQUIRED)
def test_every_command_has_a_usage_block_equal_to_its_help(command: str) -> None:
    found = usage_blocks(readme())
    if not found:
        pytest.skip(PENDING)
    assert command in found, (f"README.md has no usage block for `{command}`: add a "
                              f"```console block starting with `$ {command} --help`")
    block = found[command]
    assert body_after_usage_line(block) == help_text(command), mismatch(command, block)


def test_optional_usage_blocks_are_real_commands_and_match() -> None:
    found = usage_blocks(readme())
    if not found:
        pytest.skip(PENDING)
    for command, block in found.items():
        assert command in COMMANDS, f"README.md:{block.line}: `{command}` is not a command"
        assert body_after_usage_line(block) == help_text(command), mismatch(command, block)


# -- rule 3: example command lines ------------------------------------------------------------


def command_lines(text: str) -> list[tuple[int, str]]:
    """(line number, command) for every shell command line of the README's examples."""
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


def test_readme_examples_use_real_commands_and_options() -> None:
    problems = []
    for number, line in command_lines(readme()):
        for args in kaudit_invocations(line):
            command, rest = resolve(args)
            if command.is_group and rest and not rest[0].startswith("-"):
                problems.append(f"README.md:{number}: `{command.name} {rest[0]}` is not a "
                                "command")
                continue
            flags = known_flags(command)
            for word in rest:
                if not word.startswith("-") or word == "-":
                    continue
                flag = word.split("=", 1)[0]
                if flag.startswith("--") or len(flag) == 2:
                    if flag not in flags:
                        problems.append(f"README.md:{number}: `{command.name}` has no "
                                        f"option {flag}")
                elif flag[:2] in flags and set(flag[1:]) == {flag[1]}:  # -vv
                    continue
                else:
                    problems.append(f"README.md:{number}: `{command.name}`: unknown {flag}")
    assert not problems, "\n".join(problems)


def test_the_example_checker_catches_a_wrong_option() -> None:
    """The checker above is not vacuous: a renamed option or command is caught."""
    command, rest = resolve(["check", "--polcy", "durable"])
    assert rest == ["--polcy", "durable"]
    assert command.name == "kaudit check" and "--polcy" not in known_flags(command)
    assert kaudit_invocations('eval "$(kaudit lab env)" && kaudit cluster | head') == [
        ["lab", "env"], ["cluster"]]
    assert resolve(["lab", "kill", "2", "--signal", "STOP"])[0].name == "kaudit lab kill"


# -- rule 4: exit codes ------------------------------------------------------------------------


def test_exit_code_table_matches_the_exit_codes() -> None:
    text = readme()
    section = re.search(r"^#+ Exit codes\s*\n(.*?)(?=^#)", text + "\n#", re.MULTILINE | re.DOTALL)
    assert section, "README.md has no 'Exit codes' section"
    codes = {int(m.group(1)) for m in re.finditer(r"^\|\s*(\d+)\s*\|", section.group(1),
                                                   re.MULTILINE)}
    expected = {int(c) for c in ExitCode}
    assert codes <= expected, f"codes kaudit never uses: {sorted(codes - expected)}"
    assert expected - codes <= {int(ExitCode.INTERNAL)}, (
        f"codes missing from the README: {sorted(expected - codes - {ExitCode.INTERNAL})}")


# -- the fixer ---------------------------------------------------------------------------------


def fix(text: str) -> tuple[str, list[str]]:
    """Rewrite every usage block's body to the real --help; returns the text and commands."""
    changed = []
    for command, block in sorted(usage_blocks(text).items(), key=lambda kv: -kv[1].start):
        if command not in COMMANDS:
            continue
        first = block.body.split("\n", 1)[0]
        new_body = f"{first}\n{help_text(command)}\n"
        if block.body != new_body:
            text = text[:block.start] + new_body + text[block.start + len(block.body):]
            changed.append(command)
    return text, changed


def usage_section(commands: list[str]) -> str:
    """Markdown usage blocks for ``commands``, for pasting into the README."""
    return "\n".join(f"```console\n$ {c} --help\n{help_text(c)}\n```\n" for c in commands)


if __name__ == "__main__":
    if sys.argv[1:] == ["--fix"]:
        new_text, commands = fix(readme())
        README.write_text(new_text, encoding="utf-8")
        print(f"README.md: refreshed {len(commands)} usage block(s): {', '.join(commands)}")
    elif sys.argv[1:] == ["--print"]:
        extra = [c for c in COMMANDS if c not in REQUIRED and c == "kaudit probe matrix"]
        print(usage_section(REQUIRED + extra), end="")
    else:
        sys.exit("usage: python -m tests.unit.test_readme --fix | --print")
