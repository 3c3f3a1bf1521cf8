"""The user guide's console examples against real output, so they cannot drift.

An example (in README.md or a page of the guide, ``docs/``) is a ```` ```console ````
block: a ``$ kaudit ...`` line (continued with ``\\``), then what the command printed,
stderr and stdout as they came. Its text is compared with a real run's after both are
*normalised*: the state directory, ports, cluster and run ids, and every number (counts and
times vary from run to run) become placeholders, and runs of blanks one blank. What is compared:

- every line outside a bordered table must appear in the real output, in order (stderr
  lines, ``kaudit <command>: ...``, against stderr; the rest against stdout), wherever the
  real output wrapped it (blanks and line ends are left out of that comparison);
- every bordered table's header (its columns' names) must be a header of the real output
  (the rows are left out: where a cell wraps depends on the paths' lengths);
- a ``[... ...]`` passage (it may span lines) stands for output cut for the page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pages() -> list[Path]:
    """README.md and every page of the guide written by hand (the generated option
    references under docs/reference/ hold no examples)."""
    docs = ROOT / "docs"
    written = sorted(p for p in docs.rglob("*.md")
                     if not {"reference", "_build"} & set(p.relative_to(docs).parts))
    return [ROOT / "README.md", *written]


BY_CHANCE = ("Its duplicates and reorderings come from retries",)
"""Lines a run prints only when chance had it so (acks=all without idempotence duplicates a
write in some failovers, not in all): a page may show them, a run need not."""
README_STATE_DIR = "/tmp/helper-demo-lab"


@dataclass(frozen=True)
class Example:
    command: str
    lines: list[str]


def example(command_start: str) -> Example:
    """The example whose command starts with ``command_start`` (``kaudit demo``), the first
    of every page's."""
    blocks = [block for page in pages() for block in
              re.findall(r"```console\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]
    for block in blocks:
        lines = block.splitlines()
        if lines and lines[0].startswith(f"$ {command_start}"):
            n = 1
            while lines[n - 1].endswith("\\"):
                n += 1
            return Example(" ".join(lines[:n]), lines[n:])
    raise AssertionError(f"no page of the guide has a console example of `{command_start}`")


def commands(ex: Example) -> list[Example]:
    """A block of several commands (``$ eval ...``, ``$ kaudit cluster``) cut into one
    example per command; a command that printed nothing keeps no lines."""
    out = [Example(ex.command, [])]
    for line in ex.lines:
        if line.startswith("$ "):
            out.append(Example(line, []))
        else:
            out[-1].lines.append(line)
    return out


def normalise(line: str, state_dir: str) -> str:
    """A line with what varies between runs replaced by placeholders."""
    line = line.replace(state_dir, "<state>").replace(README_STATE_DIR, "<state>")
    line = re.sub(r"127\.0\.0\.1:\d+(,127\.0\.0\.1:\d+)*", "<bootstrap>", line)
    line = re.sub(r"(?<![\w.-])[A-Za-z0-9_-]{22}(?![\w.-])", "<id>", line)  # a cluster id
    line = re.sub(r"\b[0-9a-f]{12}\b", "<id>", line)
    # What a failover happened to duplicate or leave unanswered, this time.
    line = re.sub(r", [\d,]+ (duplicated|reordered|sends never answered \(indeterminate: not "
                  r"counted as lost\))", "", line)
    line = re.sub(r"\d[\d,.]*", "N", line)
    # A demo topic is created on a first run and found on the next.
    line = re.sub(r"\b(created|exists) ", "<created> ", line)
    return " ".join(line.split())


def _bare(text: str, state_dir: str) -> str:
    """``text`` normalised and without blanks; a state directory wrapped over two lines is
    still one."""
    for path in (state_dir, README_STATE_DIR):
        text = re.sub(r"\s*".join(map(re.escape, path)), "<state>", text)
    return normalise(text, state_dir).replace(" ", "")


def _without_cuts(lines: list[str]) -> list[str]:
    out, cutting = [], False
    for line in lines:
        if line.lstrip().startswith("[..."):
            cutting = True
        if not cutting:
            out.append(line)
        if cutting and line.rstrip().endswith("...]"):
            cutting = False
    return out


def _bordered_headers(lines: list[str], state_dir: str) -> list[str]:
    """Each bordered table's header: the lines between its top border and its ``+===``
    line, column by column, the words of a column joined."""
    headers = []
    for i, line in enumerate(lines):
        if not line.startswith("+=") or i < 1:
            continue
        start = i - 1
        while start > 0 and not lines[start - 1].startswith("+"):
            start -= 1
        rows = [[cell.strip() for cell in row.strip().strip("|").split("|")]
                for row in lines[start:i]]
        columns = [" ".join(filter(None, column)) for column in zip(*rows, strict=False)]
        headers.append(normalise(" | ".join(columns), state_dir))
    return headers


def mismatches(ex: Example, stdout: str, stderr: str, state_dir: str,
               stderr_prefix: str) -> list[str]:
    """What the example shows that the real output lacks (empty: they agree)."""
    shown = _without_cuts(ex.lines)
    problems = []
    for stream, real in (("stderr", stderr), ("stdout", stdout)):
        # Where a line wraps depends on the paths' lengths (a heading of 82 characters on the
        # page is 108 with the test lab's path), so the real output is read as one text
        # without blanks, and each line of the example must be found in it, in order.
        text = _bare(real, state_dir)
        mine = [x for x in shown if x.startswith(stderr_prefix) == (stream == "stderr")
                and not x.startswith(("|", "+"))]
        position = 0
        for line in mine:
            wanted = _bare(line, state_dir)
            if not wanted or line.startswith(BY_CHANCE):
                continue
            found = text.find(wanted, position)
            if found < 0:
                problems.append(f"{stream} lacks (in this order): {line}")
            else:
                position = found + len(wanted)
    real_headers = _bordered_headers(stdout.splitlines(), state_dir)
    for header in _bordered_headers(shown, state_dir):
        if header not in real_headers:
            problems.append(f"no table with the columns: {header} (real: {real_headers})")
    return problems
