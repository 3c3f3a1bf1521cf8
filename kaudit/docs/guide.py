"""What the user guide's Sphinx build (``docs/conf.py``) takes from kaudit."""

from __future__ import annotations

import re


def heading_slug(title: str) -> str:
    """A heading's anchor: a rule's section is reached by its id alone (``rules.md#ka101``),
    as SARIF's help links and GitHub (through the ``<a id>`` before each rule) reach it;
    every other heading by GitHub's slug."""
    from myst_parser.slugs import github_slugify

    rule = re.match(r"(KA\d{3})\b", title)
    return rule.group(1).lower() if rule else str(github_slugify(title))
