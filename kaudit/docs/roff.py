"""Writing man(7) roff: escaping, inline Markdown, and Markdown blocks.

Every text line kaudit's man pages hold goes through :func:`escape` (or
:func:`inline`, which escapes too), so a backslash, a leading dot or
apostrophe, a hyphen in an option name or a non-ASCII character can never
turn into a roff request or a renderer warning.

Hyphens are all written ``\\-`` (as pandoc does): options, config keys and
commands copied from a rendered page then paste as the ASCII ``-`` a shell
needs.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass

_PLAIN = {
    "\\": r"\e",
    "-": r"\-",
    "'": r"\(aq",
    "`": r"\(ga",
    '"': r"\(dq",
    "~": r"\(ti",
    "^": r"\(ha",
}


def escape(text: str) -> str:
    """``text`` as roff that prints exactly these characters."""
    out: list[str] = []
    for char in text:
        if char in _PLAIN:
            out.append(_PLAIN[char])
        elif ord(char) > 126 or (ord(char) < 32 and char != "\t"):
            out.append(f"\\[u{ord(char):04X}]")
        else:
            out.append(char)
    return "".join(out)


def text_line(roff: str, width: int = 80) -> str:
    """Running text as roff input lines that can never be read as requests.

    Long text is wrapped at spaces to ``width`` bytes (a roff line break in
    running text is just a space). A line starting with ``.`` or ``'`` would be
    a request, one starting with a space forces a break: both are neutralised.
    """
    lines = textwrap.wrap(roff.strip(), width=width, break_long_words=False,
                          break_on_hyphens=False) or [""]
    return "\n".join("\\&" + line if line.startswith((".", "'")) else line for line in lines)


def bold(text: str) -> str:
    """``text`` escaped, in bold."""
    return f"\\fB{escape(text)}\\fR"


def italic(text: str) -> str:
    """``text`` escaped, in italics."""
    return f"\\fI{escape(text)}\\fR"


def macro(name: str, *args: str) -> str:
    """A request line such as ``.SH "SEE ALSO"``; arguments are already roff."""
    quoted = [f'"{a}"' if (" " in a or not a) else a for a in args]
    return " ".join([f".{name}", *quoted])


def title_line(page: str, section: int, version: str) -> str:
    """The ``.TH`` line. No date: regeneration must be byte-for-byte stable."""
    return macro("TH", escape(page.upper()), str(section), "", escape(f"kaudit {version}"),
                 "kaudit manual")


# Inline Markdown: code spans first (nothing inside them is markup), then links,
# strong and emphasis on what is left.
_CODE = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])")


def inline(markdown: str) -> str:
    """One line of inline Markdown (code, links, strong, emphasis) as roff."""
    parts: list[str] = []
    pos = 0
    for m in _CODE.finditer(markdown):
        parts.append(_inline_prose(markdown[pos:m.start()]))
        parts.append(bold(m.group(2).strip()))
        pos = m.end()
    parts.append(_inline_prose(markdown[pos:]))
    return "".join(parts)


def _inline_prose(text: str) -> str:
    text = _LINK.sub(lambda m: m.group(1) if m.group(2).startswith("#") or
                     m.group(2).endswith(".md") else f"{m.group(1)} <{m.group(2)}>", text)
    out: list[str] = []
    pos = 0
    marks = sorted([(m.start(), m.end(), "B", m.group(1)) for m in _STRONG.finditer(text)])
    consumed = [(s, e) for s, e, _, _ in marks]
    for m in _EMPHASIS.finditer(text):
        if not any(s <= m.start() < e for s, e in consumed):
            marks.append((m.start(), m.end(), "I", m.group(1)))
    for start, end, font, inner in sorted(marks):
        if start < pos:
            continue
        out.append(escape(text[pos:start]))
        out.append(f"\\f{font}{escape(inner)}\\fR")
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def paragraphs(text: str) -> list[str]:
    """Help or doc text split at blank lines, each paragraph joined onto one line."""
    blocks = re.split(r"\n\s*\n", text.strip())
    return [" ".join(line.strip() for line in b.splitlines() if line.strip()) for b in blocks
            if b.strip()]


# Markdown blocks -----------------------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    """``#``, ``##`` or ``###`` heading."""

    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    """Running text (lines joined)."""

    text: str


@dataclass(frozen=True)
class CodeBlock:
    """A fenced code block, kept line for line."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A pipe table: header cells and rows of cells."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class BulletList:
    """A ``-`` or ``*`` list; each item's lines joined."""

    items: tuple[str, ...]


Block = Heading | Paragraph | CodeBlock | Table | BulletList

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_RULER = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def _cells(line: str) -> tuple[str, ...]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body))


def parse_markdown(markdown: str) -> list[Block]:
    """The block structure of the Markdown subset kaudit's docs use.

    Headings, paragraphs, fenced code, pipe tables and bullet lists. Anything
    else (raw HTML lines, for one) is kept as a paragraph of text.
    """
    lines = markdown.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.lstrip().startswith("```"):
            fence = line.lstrip()[:3]
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(fence):
                body.append(lines[i].rstrip())
                i += 1
            blocks.append(CodeBlock(tuple(body)))
            i += 1
        elif m := _HEADING.match(line):
            blocks.append(Heading(len(m.group(1)), m.group(2)))
            i += 1
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and _RULER.match(lines[i + 1]):
            header = _cells(line)
            rows: list[tuple[str, ...]] = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            blocks.append(Table(header, tuple(rows)))
        elif _BULLET.match(line):
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                if m := _BULLET.match(lines[i]):
                    items.append(m.group(1).strip())
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            blocks.append(BulletList(tuple(items)))
        else:
            text: list[str] = []
            while (i < len(lines) and lines[i].strip() and not _HEADING.match(lines[i])
                   and not lines[i].lstrip().startswith(("```", "|"))
                   and not _BULLET.match(lines[i])):
                text.append(lines[i].strip())
                i += 1
            blocks.append(Paragraph(" ".join(text)))
    return blocks


class RoffWriter:
    """Accumulates a page's lines and knows when a paragraph macro is needed.

    man(7) wants no ``.PP`` right after a heading and no blank lines at all;
    tracking the last request here keeps every page lint-clean.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._after_heading = False
        self._indented = False

    def raw(self, line: str) -> None:
        """A request line, as is."""
        self.lines.append(line)

    def text(self, roff: str) -> None:
        """Text lines with no paragraph macro before them (NAME, a line after ``.br``)."""
        self.lines.append(text_line(roff))
        self._after_heading = False

    def comment(self, text: str) -> None:
        """A roff comment line."""
        self.lines.append(f'.\\" {text}')

    def section(self, title: str) -> None:
        """``.SH`` (the title is escaped and upper-cased)."""
        self.lines.append(macro("SH", escape(title.upper())))
        self._after_heading, self._indented = True, False

    def subsection(self, title_roff: str) -> None:
        """``.SS`` with an already-escaped title."""
        self.lines.append(macro("SS", title_roff))
        self._after_heading, self._indented = True, False

    def paragraph(self, roff: str) -> None:
        """A paragraph of running text (already roff)."""
        if not self._after_heading:
            self.lines.append(".PP")
        self.lines.append(text_line(roff))
        self._after_heading, self._indented = False, False

    def tagged(self, tag_roff: str, body_roff: list[str]) -> None:
        """A ``.TP`` item: the tag on its own line, the body indented below or beside it."""
        self.lines.append(".TP")
        self.lines.append(text_line(tag_roff))
        for i, line in enumerate(body_roff):
            if i:
                self.lines.append(".br")
            self.lines.append(text_line(line))
        self._after_heading, self._indented = False, True

    def bullet(self, roff: str) -> None:
        """One bullet list item."""
        self.lines.append(".IP \\(bu 2")
        self.lines.append(text_line(roff))
        self._after_heading, self._indented = False, True

    def code(self, lines: tuple[str, ...] | list[str]) -> None:
        """A literal block, indented, no filling."""
        if not self._after_heading:
            self.lines.append(".PP")
        self.lines.extend([".RS 4", ".nf"])
        for line in lines:
            # Literal lines are never wrapped; only a leading dot or quote is neutralised.
            escaped = escape(line)
            self.lines.append("\\&" + escaped if escaped.startswith((".", "'")) else escaped)
        self.lines.extend([".fi", ".RE"])
        self._after_heading, self._indented = False, False

    def markdown(self, markdown: str, *, top_level: int = 2) -> None:
        """Markdown blocks: headings of ``top_level`` become ``.SH``, one deeper ``.SS``.

        Headings above ``top_level`` are dropped (the page has its own title).
        A table becomes a ``.TP`` list: the first cell is the tag, each other cell a
        ``header: value`` line, a ``meaning`` column plain text.
        """
        for block in parse_markdown(markdown):
            if isinstance(block, Heading):
                if block.level == top_level:
                    self.section(_strip_inline(block.text))
                elif block.level > top_level:
                    self.subsection(inline(block.text))
            elif isinstance(block, Paragraph):
                self.paragraph(inline(block.text))
            elif isinstance(block, CodeBlock):
                self.code(block.lines)
            elif isinstance(block, BulletList):
                for item in block.items:
                    self.bullet(inline(item))
                self._after_heading = False
            else:
                for tag, body in _table_items(block):
                    self.tagged(tag, body)

    def page(self) -> str:
        """The finished page (blank lines in literal blocks kept, nowhere else)."""
        out: list[str] = []
        literal = False
        for line in self.lines:
            if line == ".nf":
                literal = True
            elif line == ".fi":
                literal = False
            if line or literal:
                out.append(line)
        return "\n".join(out) + "\n"


def _strip_inline(markdown: str) -> str:
    return _CODE.sub(lambda m: m.group(2), markdown)


def _table_items(table: Table) -> Iterator[tuple[str, list[str]]]:
    for row in table.rows:
        cells = list(row) + [""] * (len(table.header) - len(row))
        tag = inline(cells[0])
        if "\\f" not in tag:
            tag = f"\\fB{tag}\\fR"
        labelled: list[str] = []
        plain: list[str] = []
        for header, cell in zip(table.header[1:], cells[1:], strict=False):
            if not cell:
                continue
            if header.strip().lower() in {"meaning", "description"}:
                plain.append(inline(cell))
            else:
                labelled.append(f"\\fI{_inline_prose(header)}\\fR: {inline(cell)}")
        yield tag, labelled + plain
