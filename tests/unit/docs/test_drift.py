"""The committed generated docs are exactly what the generator writes now."""

from __future__ import annotations

import difflib
import shutil
from functools import lru_cache
from pathlib import Path

import pytest

from kaudit.docs import generate, out_of_date, stale_files
from kaudit.docs.__main__ import main
from tests.unit.docs.roffpage import ROOT

HINT = "run `python -m kaudit.docs` and commit the result"


@lru_cache(maxsize=1)
def generated() -> dict[str, str]:
    """What the generator produces from the current CLI, rules and docs/policy.md."""
    return generate(ROOT)


@pytest.mark.parametrize("rel", sorted(generated()))
def test_committed_file_matches_the_generator(rel: str) -> None:
    path = ROOT / rel
    assert path.is_file(), f"{rel} is missing: {HINT}"
    committed = path.read_text(encoding="utf-8")
    fresh = generated()[rel]
    if committed != fresh:
        diff = "".join(list(difflib.unified_diff(
            committed.splitlines(keepends=True), fresh.splitlines(keepends=True),
            f"{rel} (committed)", f"{rel} (generated)"))[:40])
        pytest.fail(f"{rel} is out of date: {HINT}\n{diff}")


def test_no_stale_generated_pages() -> None:
    assert stale_files(ROOT, generated()) == [], f"pages for removed commands: {HINT}"


def test_generation_is_deterministic() -> None:
    assert generate(ROOT) == generated()


def test_the_expected_pages_are_generated() -> None:
    names = set(generated())
    assert {"man/kaudit.1", "man/kaudit-check.1", "man/kaudit-cluster.1",
            "man/kaudit-snapshot.1", "man/kaudit-lab.1", "man/kaudit-policy.5",
            "man/kaudit-rules.7", "docs/rules.md"} <= names


def _copy_checkout(tmp_path: Path) -> Path:
    for folder in ("docs", "man"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    return tmp_path


def test_check_mode_passes_on_the_committed_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check", "--root", str(ROOT)]) == 0
    assert "up to date" in capsys.readouterr().out


def test_check_mode_lists_files_that_differ(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = _copy_checkout(tmp_path)
    (root / "man" / "kaudit-check.1").write_text(".TH OLD 1\n")
    (root / "docs" / "rules.md").unlink()
    assert main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "out of date: man/kaudit-check.1" in err
    assert "out of date: docs/rules.md" in err
    assert "python -m kaudit.docs" in err
    assert out_of_date(root, generated()) == ["man/kaudit-check.1", "docs/rules.md"]


def test_write_mode_repairs_and_removes_stale_pages(tmp_path: Path) -> None:
    root = _copy_checkout(tmp_path)
    (root / "man" / "kaudit-check.1").write_text("edited by hand\n")
    stale = root / "man" / "kaudit-gone.1"
    stale.write_text((ROOT / "man" / "kaudit-lab.1").read_text())
    by_hand = root / "man" / "notes.1"
    by_hand.write_text(".TH NOTES 1\n")
    assert main(["--root", str(root)]) == 0
    assert out_of_date(root, generated()) == []
    assert not stale.exists()
    assert by_hand.exists(), "only pages the generator wrote are ever deleted"
