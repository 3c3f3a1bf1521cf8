"""Reading generated man pages back in tests: sections and subsections by title."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""The repository checkout."""

MAN = ROOT / "man"


def _title(line: str, macro: str) -> str | None:
    m = re.match(rf"^\.{macro}\s+(.*)$", line)
    return m.group(1).strip().strip('"') if m else None


def section(page: str, title: str) -> str:
    """The roff lines of ``.SH TITLE`` up to the next ``.SH`` (empty when absent)."""
    out: list[str] = []
    inside = False
    for line in page.splitlines():
        heading = _title(line, "SH")
        if heading is not None:
            inside = heading == title
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def subsection(page: str, title: str) -> str:
    """The roff lines of ``.SS TITLE`` up to the next ``.SS`` or ``.SH``."""
    out: list[str] = []
    inside = False
    for line in page.splitlines():
        if _title(line, "SH") is not None:
            inside = False
            continue
        heading = _title(line, "SS")
        if heading is not None:
            inside = heading == title
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def pages() -> list[Path]:
    """Every man page committed in man/."""
    return sorted(p for p in MAN.iterdir() if re.search(r"\.[1-8]$", p.name))
