"""Sphinx configuration of kaudit's user guide (``sphinx-build -W docs <out>``).

The pages are Markdown (MyST). ``reference/`` holds each command's option reference,
generated with the man pages by ``python -m kaudit.docs``; the command pages include them, so
they are not pages of their own.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kaudit import __version__

project = "kaudit"
author = "the kaudit authors"
copyright = "2026, the kaudit authors"
release = version = __version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "reference"]
# Links to a page's sections (`[exit codes](exit-codes-and-output.md#exit-codes)`).
myst_heading_anchors = 3

html_theme = "furo"
html_title = f"kaudit {release}"
html_static_path: list[str] = []
html_show_sourcelink = False

# A rule's section is reached by its id alone (rules.md#ka101), as SARIF's links have it.
myst_heading_slug_func = "kaudit.docs.guide.heading_slug"
# `--fail-on` in prose stays two hyphens (docutils' smart quotes would make it an en dash):
# what the guide shows is what the user types.
smartquotes = False
