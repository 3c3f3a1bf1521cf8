"""``kaudit-policy.5``, converted from the hand-written ``docs/policy.md``.

The Markdown file stays the one place the policy format is described; this
page is regenerated from it, and the drift test fails when the two disagree.
"""

from __future__ import annotations

from kaudit.docs.manpage import POLICY_PAGE, RULES_PAGE, start_page
from kaudit.docs.roff import bold, escape

SOURCE = "docs/policy.md"
"""The Markdown the page is converted from, relative to the repository root."""


def policy_manpage(markdown: str) -> str:
    """The man page for the policy format, from the Markdown of ``docs/policy.md``.

    The ``#`` title line is replaced by NAME; the text before the first ``##``
    heading becomes DESCRIPTION, each ``##`` a section, each ``###`` a subsection.
    """
    w = start_page(POLICY_PAGE, 5)
    w.comment(f"Converted from {SOURCE}.")
    w.section("name")
    w.text(f"{escape(POLICY_PAGE)} \\- policy files of kaudit check")
    w.section("description")
    lines = markdown.lstrip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    w.markdown("\n".join(lines), top_level=2)
    w.section("see also")
    w.paragraph(f"{bold('kaudit-check')}(1), {bold(RULES_PAGE)}(7), {bold('kaudit')}(1)")
    return w.page()
