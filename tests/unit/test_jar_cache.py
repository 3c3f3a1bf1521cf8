"""The jar cache (kaudit.jvm.resolve_jars) with a stand-in `mvn` on PATH: what Maven
does is not under test here, only what kaudit does around it."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from kaudit.errors import RuntimeUnavailable
from kaudit.jvm import resolve_jars

# Counts its calls, takes a while, then copies "the jar" into -DoutputDirectory, or fails
# when FAKE_MVN_FAIL is set.
FAKE_MVN = """#!/bin/sh
echo call >> "$FAKE_MVN_CALLS"
sleep 0.5
if [ -n "$FAKE_MVN_FAIL" ]; then echo "[ERROR] Could not resolve demo:demo:1.0"; exit 1; fi
for arg in "$@"; do
  case "$arg" in -DoutputDirectory=*) out="${arg#-DoutputDirectory=}";; esac
done
mkdir -p "$out" && touch "$out/demo-1.0.jar"
"""

ARTIFACTS = [("org.example", "demo", "1.0")]


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(FAKE_MVN)
    mvn.chmod(mvn.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("KAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKE_MVN_CALLS", str(tmp_path / "calls"))
    return tmp_path / "calls"


def resolve() -> Path:
    return resolve_jars("demo/1.0", ARTIFACTS, what="the demo jars", marker="demo-*.jar")


def test_two_runs_at_once_resolve_once_and_both_get_the_jars(calls: Path) -> None:
    start = threading.Barrier(2)
    results: list[Path | BaseException] = []

    def run() -> None:
        start.wait()
        try:
            results.append(resolve())
        except BaseException as exc:  # the test reports what went wrong
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 2 and all(isinstance(r, Path) for r in results), results
    assert results[0] == results[1]
    assert [p.name for p in Path(results[0]).iterdir()] == ["demo-1.0.jar"]
    assert calls.read_text().splitlines() == ["call"]  # the second waited, then reused
    assert resolve() == results[0] and len(calls.read_text().splitlines()) == 1


def test_a_failed_resolution_leaves_nothing_and_the_next_run_tries_again(
        calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MVN_FAIL", "1")
    with pytest.raises(RuntimeUnavailable, match="could not resolve the demo jars: Could not"):
        resolve()
    libs = calls.parent / "cache" / "demo" / "1.0" / "libs"
    assert not libs.exists()
    monkeypatch.delenv("FAKE_MVN_FAIL")
    assert resolve() == libs and (libs / "demo-1.0.jar").is_file()
    assert len(calls.read_text().splitlines()) == 2


def test_a_test_jar_is_asked_by_its_classifier_and_alone_when_not_transitive(
        calls: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake mvn records its arguments beside its calls.
    mvn = calls.parent / "bin" / "mvn"
    mvn.write_text(FAKE_MVN.replace('echo call >> "$FAKE_MVN_CALLS"',
                                    'echo "$@" >> "$FAKE_MVN_CALLS"'))
    libs = resolve_jars("tiered/1.0", [("org.example", "demo", "1.0", "test")],
                        what="the demo test jar", marker="demo-*.jar", transitive=False)
    pom = (libs.parent / "pom.xml").read_text()
    assert ("<artifactId>demo</artifactId><version>1.0</version>"
            "<classifier>test</classifier>") in pom
    assert "-DexcludeTransitive=true" in calls.read_text().split()
    resolve()
    assert "-DexcludeTransitive=true" not in calls.read_text().splitlines()[-1].split()
