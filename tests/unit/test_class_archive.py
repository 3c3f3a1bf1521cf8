"""The JVM class archive's life: written once by a JVM as it exits, published, read by later
JVMs, dropped when damaged; never added against the user's own sharing options."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from kaudit.jvm import ClassArchive


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAUDIT_CACHE_DIR", str(tmp_path))
    return tmp_path / "jvm-archives"


def test_the_first_jvm_writes_it_and_once_published_the_next_reads_it(cache: Path) -> None:
    first = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    [write] = first.options({})
    assert first.partial == cache / f"{first.path.name}.{os.getpid()}.partial"
    assert write == f"-XX:ArchiveClassesAtExit={first.partial}" and not first.reading
    first.partial.write_bytes(b"classes")  # what the JVM writes as it exits
    first.publish(143)  # ended by SIGTERM, through the JVM's own exit
    assert first.path.read_bytes() == b"classes" and first.partial is None
    second = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    assert second.path == first.path
    assert second.options({}) == [f"-XX:SharedArchiveFile={first.path}"] and second.reading
    second.discard()  # a JVM could not start with it
    assert not first.path.exists() and not second.reading


def test_an_archive_from_a_killed_or_unseen_jvm_is_never_published(cache: Path) -> None:
    for exit_code in (-9, None):
        archive = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
        archive.options({})
        assert archive.partial is not None
        archive.partial.write_bytes(b"half")
        partial = archive.partial
        archive.publish(exit_code)
        assert not archive.path.exists() and not partial.exists(), exit_code
    archive = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    archive.options({})
    archive.publish(0)  # the JVM wrote nothing (it could not): nothing to publish
    assert not archive.path.exists()


def test_what_it_depends_on_is_in_its_name(cache: Path) -> None:
    names = {ClassArchive("spark-driver", sys.executable, sig).path.name
             for sig in (["4.0.0"], ["4.0.1"], ["4.0.0", "-XX:+UseParallelGC"])}
    assert len(names) == 3


@pytest.mark.parametrize("variable", ["JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
                                      "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS"])
@pytest.mark.parametrize("option", ["-Xshare:off", "-XX:SharedArchiveFile=/x.jsa",
                                    "-XX:ArchiveClassesAtExit=/y.jsa"])
def test_the_users_own_sharing_options_win(cache: Path, variable: str, option: str) -> None:
    archive = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    assert archive.options({variable: f"-Xmx1g {option}"}) == []
    assert archive.partial is None


def test_partials_left_by_killed_jvms_are_swept_after_an_hour(cache: Path) -> None:
    cache.mkdir(parents=True)
    old, recent = cache / "a.jsa.1.partial", cache / "b.jsa.2.partial"
    for f in (old, recent):
        f.write_bytes(b"x")
    hours_ago = time.time() - 7200
    os.utime(old, (hours_ago, hours_ago))
    ClassArchive("spark-driver", sys.executable, ["4.0.0"]).options({})
    assert not old.exists() and recent.exists()


def test_an_unwritable_cache_starts_without_an_archive(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KAUDIT_CACHE_DIR", str(blocker))
    archive = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    assert archive.options({}) == [] and archive.partial is None


def test_publishing_keeps_the_two_most_recently_used_archives_of_its_name(cache: Path) -> None:
    cache.mkdir(parents=True)
    older, used, other = (cache / "spark-driver-aaaa.jsa", cache / "spark-driver-bbbb.jsa",
                          cache / "kafka-broker-cccc.jsa")
    for age_h, f in ((72, older), (48, used), (96, other)):
        f.write_bytes(b"x")
        os.utime(f, (time.time() - age_h * 3600,) * 2)
    # A start that reads an archive makes it the most recently used one.
    reader = ClassArchive("spark-driver", sys.executable, ["4.0.0"])
    reader.path = used
    assert reader.options({}) == [f"-XX:SharedArchiveFile={used}"]
    assert time.time() - used.stat().st_mtime < 60
    archive = ClassArchive("spark-driver", sys.executable, ["4.0.1"])  # a new pyspark
    archive.options({})
    assert archive.partial is not None
    archive.partial.write_bytes(b"classes")
    archive.publish(0)
    assert archive.path.exists() and used.exists()
    assert not older.exists()  # the third of its name, the least recently used
    assert other.exists()  # another JVM's archive is not this one's to remove
