"""Every man page renders with groff (and man-db, mandoc when present) without a warning."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.docs.roffpage import pages

PAGES = pages()
IDS = [p.name for p in PAGES]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_every_page_is_present() -> None:
    assert {p.suffix for p in PAGES} == {".1", ".5", ".7"}


@pytest.mark.skipif(shutil.which("groff") is None,
                    reason="groff is not installed (Debian: apt-get install groff-base)")
@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_groff_renders_without_warnings(page: Path) -> None:
    lint = _run("groff", "-man", "-Tutf8", "-ww", "-z", str(page))
    assert lint.returncode == 0 and lint.stderr == "", lint.stderr
    shown = _run("groff", "-man", "-Tutf8", "-P-c", "-P-b", "-P-u", str(page))
    assert shown.returncode == 0, shown.stderr
    assert "NAME" in shown.stdout and "SEE ALSO" in shown.stdout
    # No roff escape leaked into the rendered text.
    assert "\\f" not in shown.stdout and "\\-" not in shown.stdout and "\\(" not in shown.stdout


@pytest.mark.skipif(shutil.which("man") is None,
                    reason="man is not installed (Debian: apt-get install man-db)")
@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_man_l_renders_without_warnings(page: Path) -> None:
    shown = _run("man", "--warnings", "-l", str(page))
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "NAME" in shown.stdout


@pytest.mark.skipif(shutil.which("mandoc") is None,
                    reason="mandoc is not installed (optional, stricter lint: apt-get install "
                           "mandoc)")
@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_mandoc_lint_is_clean(page: Path) -> None:
    lint = _run("mandoc", "-Tlint", "-Wall", str(page))
    # The one accepted message: .TH carries no date on purpose, so regenerating a
    # page never changes it; the version is in the footer instead.
    problems = [line for line in (lint.stdout + lint.stderr).splitlines()
                if line.strip() and "missing date" not in line]
    assert problems == []
