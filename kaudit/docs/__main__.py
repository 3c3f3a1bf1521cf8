"""``python -m kaudit.docs [--check] [--root DIR]``: regenerate (or check) the generated docs.

Exit 0 when everything was written or is up to date, 1 with ``--check`` when
files differ (listed on stderr), 2 when the repository root cannot be found.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kaudit.docs.build import generate, out_of_date, write
from kaudit.errors import ExitCode


def find_root(start: Path) -> Path | None:
    """The repository checkout holding ``start``: the nearest folder with pyproject.toml."""
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "kaudit").is_dir():
            return folder
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the generator; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m kaudit.docs",
        description="Regenerate kaudit's man pages (man/) and rule reference (docs/rules.md).")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 listing the files that differ")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="repository checkout (default: the one kaudit is imported from)")
    args = parser.parse_args(argv)
    root = args.root.resolve() if args.root else find_root(Path(__file__).resolve().parent)
    if root is None or not (root / "docs").is_dir():
        print("kaudit.docs: error: cannot find the kaudit repository checkout; pass --root DIR",
              file=sys.stderr)
        return int(ExitCode.USAGE)
    files = generate(root)
    if args.check:
        differ = out_of_date(root, files)
        for rel in differ:
            print(f"kaudit.docs: out of date: {rel}", file=sys.stderr)
        if differ:
            print("kaudit.docs: run `python -m kaudit.docs` and commit the result",
                  file=sys.stderr)
            return int(ExitCode.FINDINGS)
        print(f"kaudit.docs: {len(files)} generated files up to date")
        return int(ExitCode.OK)
    touched = write(root, files)
    for rel in touched:
        print(f"kaudit.docs: {'wrote' if (root / rel).exists() else 'removed'} {rel}")
    print(f"kaudit.docs: {len(files)} generated files, {len(touched)} changed")
    return int(ExitCode.OK)


if __name__ == "__main__":
    sys.exit(main())
