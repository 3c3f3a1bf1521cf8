"""The JVM options kaudit's own Spark session starts with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kaudit.jvm import ClassArchive, find_java
from kaudit.reconcile.spark import _gc_options


def test_the_parallel_collector_unless_the_environment_picks_one() -> None:
    assert _gc_options({}) == ["-XX:+UseParallelGC"]
    assert _gc_options({"JAVA_TOOL_OPTIONS": "-Xss2m -Dfoo=bar"}) == ["-XX:+UseParallelGC"]
    # A second collector would stop the JVM at start ("Multiple garbage collectors
    # selected"): whatever the environment names wins.
    for variable in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
                     "SPARK_SUBMIT_OPTS"):
        for chosen in ("-XX:+UseG1GC", "-XX:+UseZGC", "-XX:+UseShenandoahGC",
                       "-XX:+UseSerialGC", "-XX:+UseParallelGC"):
            assert _gc_options({variable: f"-Xmx1g {chosen} -Da=b"}) == [], (variable, chosen)
    # Turning a collector off is not picking one.
    assert _gc_options({"JAVA_TOOL_OPTIONS": "-XX:-UseG1GC"}) == ["-XX:+UseParallelGC"]


@pytest.mark.spark
def test_kaudits_session_runs_the_parallel_collector(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = sorted(str(bean.getName()) for bean in beans)
    assert names == ["PS MarkSweep", "PS Scavenge"], names


def test_a_class_archive_the_driver_cannot_start_with_is_dropped_and_it_starts_without(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A damaged archive makes the driver JVM exit at start (seen: a truncated one, SIGBUS):
    the start is made once more without it, and the archive removed."""
    import pyspark.java_gateway

    from kaudit.reconcile import spark as session

    monkeypatch.setenv("KAUDIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(session, "_archive", None)  # restored after: a suite's session's
    import pyspark

    archive = ClassArchive("spark-driver", find_java(), [
        session.spark_version(), str(Path(pyspark.__file__).parent), *_gc_options()])
    archive.path.parent.mkdir(parents=True)
    archive.path.write_bytes(b"not an archive")
    starts: list[str] = []

    def launch_gateway(conf: Any, popen_kwargs: Any) -> str:
        starts.append(conf.get("spark.driver.extraJavaOptions"))
        if len(starts) == 1:
            raise RuntimeError("Java gateway process exited before sending its port number")
        return "gateway"

    monkeypatch.setattr(pyspark.java_gateway, "launch_gateway", launch_gateway)
    starting = session.begin_session("local[1]", [])
    assert starting._launching.result(timeout=30) == "gateway"
    assert f"-XX:SharedArchiveFile={archive.path}" in starts[0]
    assert "SharedArchiveFile" not in starts[1] and "ArchiveClassesAtExit" not in starts[1]
    assert "-XX:ErrorFile=" in starts[1]  # a crash report lands in the cache, not the cwd
    assert not archive.path.exists()
