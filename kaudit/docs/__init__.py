"""Generated documentation: man pages and the rule reference.

Everything here is written from the real CLI definitions, the rule registry
and ``docs/policy.md``; ``python -m kaudit.docs`` regenerates the committed
files and ``python -m kaudit.docs --check`` says which ones are out of date.
"""

from __future__ import annotations

from kaudit.docs.build import generate, out_of_date, stale_files, write

__all__ = ["generate", "out_of_date", "stale_files", "write"]
