"""``kaudit-policy.5``, converted from the hand-written ``docs/policy.md``.

The Markdown file stays the one place the policy format is described; this
page is regenerated from it, and the drift test fails when the two disagree.
"""

from __future__ import annotations

from kaudit import __version__
from kaudit.docs.manpage import GENERATED_MARK, POLICY_PAGE, RULES_PAGE
from kaudit.docs.roff import RoffWriter, bold, escape, parse_markdown

SOURCE = "docs/policy.md"


def policy_manpage(markdown: str) -> str:
    """The man page for the policy format, from the Markdown of ``docs/policy.md``.

    The ``#`` title becomes NAME; the text before the first ``##`` heading
    DESCRIPTION; each ``##`` a section and each ``###`` a subsection.
    """
    w = RoffWriter()
    w.comment(GENERATED_MARK)
    w.comment(f"Source: {SOURCE}")
    w.raw(title_line_for_policy())
    w.section("name")
    w.raw(f"{escape(POLICY_PAGE)} \\- policy files of kaudit check")
    blocks = parse_markdown(markdown)
    w.section("description")
    body = "\n".join(markdown.splitlines()[1:]) if blocks and _is_title(markdown) else markdown
    w.markdown(body, top_level=2)
    w.section("see also")
    w.paragraph(f"{bold('kaudit-check')}(1), {bold(RULES_PAGE)}(7), {bold('kaudit')}(1)")
    return w.page()


def title_line_for_policy() -> str:
    """The ``.TH`` line of the policy page."""
    from kaudit.docs.roff import title_line

    return title_line(POLICY_PAGE, 5, __version__)


def _is_title(markdown: str) -> bool:
    return markdown.lstrip().startswith("# ")
