"""README's set-up puts kaudit's man pages where `man` finds them (README cites
`man 7 kaudit-rules`).

The pages of man/ are data files (pyproject's [tool.setuptools.data-files]), installed under
the installing prefix's share/man; an editable install leaves them out. This runs README's
own set-up line (with --no-deps) on a copy of the checkout, into a fresh venv, and asks
`man -w` with the venv's bin on PATH, as an activated venv has it: man-db looks in
../share/man of every PATH entry. The build backend (setuptools) comes from PyPI, so this
needs the network; about 7-10 s.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.name for p in (ROOT / "man").iterdir() if p.suffix in (".1", ".5", ".7"))


def readme_install() -> list[str]:
    """What README's set-up gives to ``pip install``: the first such line of the first
    shell block under "## Set up"."""
    setup = (ROOT / "README.md").read_text().split("\n## Set up\n", 1)[1]
    block = setup.split("```sh\n", 1)[1].split("```", 1)[0]
    line = next(line for line in block.splitlines() if line.startswith("pip install "))
    return shlex.split(line)[2:]


def test_readmes_set_up_is_not_editable() -> None:
    assert "-e" not in readme_install() and "--editable" not in readme_install()


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("man-install")
    # Build from a copy: the build writes build/ and kaudit.egg-info beside its sources,
    # which must not land in the working tree.
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("kaudit", "man"):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    # This interpreter's pip installs into the venv (--python), so none is bootstrapped in
    # it; --no-deps: the pages are the point, not confluent-kafka or pyspark.
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-deps", "--no-compile", "--disable-pip-version-check", "-q", *readme_install()],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=src)
    assert installed.returncode == 0, installed.stderr
    return venv


def test_the_checkout_has_pages_of_sections_1_5_and_7() -> None:
    assert {"kaudit.1", "kaudit-check.1", "kaudit-policy.5", "kaudit-rules.7"} <= set(PAGES)


def test_every_page_is_installed_under_the_venvs_share_man(venv: Path) -> None:
    for page in PAGES:
        installed = venv / "share" / "man" / f"man{page[-1]}" / page
        assert installed.read_bytes() == (ROOT / "man" / page).read_bytes(), page


@pytest.mark.parametrize(("args", "page"), [
    pytest.param(args, page, id=f"man {' '.join(args)}") for args, page in [
        (["kaudit"], "man1/kaudit.1"),
        (["kaudit-check"], "man1/kaudit-check.1"),
        (["5", "kaudit-policy"], "man5/kaudit-policy.5"),
        (["7", "kaudit-rules"], "man7/kaudit-rules.7"),
    ]])
def test_man_finds_the_page_with_the_venvs_bin_on_path(venv: Path, args: list[str], page: str,
                                                       tmp_path: Path) -> None:
    if shutil.which("man") is None:
        pytest.skip("man is not installed (.ci/run installs man-db)")
    # No MANPATH: man derives it from PATH. An empty HOME: no ~/.manpath of the machine's.
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C"}
    found = subprocess.run(["man", "-w", *args], env=env, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(venv / "share" / "man" / page)


def test_man_finds_the_pages_with_manpath_set(venv: Path, tmp_path: Path) -> None:
    if shutil.which("man") is None:
        pytest.skip("man is not installed (.ci/run installs man-db)")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C",
           "MANPATH": str(venv / "share" / "man")}
    found = subprocess.run(["man", "-w", "kaudit-check"], env=env, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert found.stdout.strip() == str(venv / "share" / "man" / "man1" / "kaudit-check.1")
