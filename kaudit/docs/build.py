"""Which files are generated, and writing or checking them in a repository checkout."""

from __future__ import annotations

from pathlib import Path

from kaudit.docs.commands import CommandDoc, command_tree
from kaudit.docs.manpage import GENERATED_MARK, POLICY_PAGE, RULES_PAGE, command_page, root_page
from kaudit.docs.options_page import options_markdown, reference_path
from kaudit.docs.policy_page import SOURCE as POLICY_SOURCE
from kaudit.docs.policy_page import policy_manpage
from kaudit.docs.rules_reference import rules_manpage, rules_markdown

MAN_DIR = "man"
RULES_MD = "docs/rules.md"


def man_page_path(command: CommandDoc) -> str:
    """Where a top-level command's (or the root's) page lives, relative to the root."""
    return f"{MAN_DIR}/{command.page}.1"


def generate(root: Path, tree: CommandDoc | None = None) -> dict[str, str]:
    """Every generated file: path relative to ``root`` -> content.

    ``root`` is the repository checkout; ``docs/policy.md`` is read from it.
    """
    tree = command_tree() if tree is None else tree
    files = {man_page_path(tree): root_page(tree)}
    for command in tree.subcommands:
        files[man_page_path(command)] = command_page(command, tree)
        files[reference_path(command)] = options_markdown(command)
    policy_md = (root / POLICY_SOURCE).read_text(encoding="utf-8")
    files[f"{MAN_DIR}/{POLICY_PAGE}.5"] = policy_manpage(policy_md)
    files[f"{MAN_DIR}/{RULES_PAGE}.7"] = rules_manpage()
    files[RULES_MD] = rules_markdown()
    return files


def stale_files(root: Path, files: dict[str, str]) -> list[str]:
    """Pages in ``man/`` this generator wrote once but no longer produces (a removed command)."""
    folder = root / MAN_DIR
    if not folder.is_dir():
        return []
    stale = []
    for path in sorted(folder.iterdir()):
        rel = f"{MAN_DIR}/{path.name}"
        if rel not in files and path.is_file() and _is_generated(path):
            stale.append(rel)
    return stale


def out_of_date(root: Path, files: dict[str, str]) -> list[str]:
    """Generated files whose committed content differs (or that are missing), and stale ones."""
    differ = []
    for rel, content in files.items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            differ.append(rel)
    return differ + stale_files(root, files)


def write(root: Path, files: dict[str, str]) -> list[str]:
    """Write what changed, delete stale pages; returns the paths touched."""
    touched = []
    for rel, content in files.items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == content:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        touched.append(rel)
    for rel in stale_files(root, files):
        (root / rel).unlink()
        touched.append(rel)
    return touched


def _is_generated(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as fh:
            return GENERATED_MARK in fh.readline()
    except (OSError, UnicodeDecodeError):
        return False
