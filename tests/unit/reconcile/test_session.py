"""The JVM options kaudit's own Spark session starts with, and what a run short of memory says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from kaudit.errors import ExitCode
from kaudit.jvm import ClassArchive, find_java
from kaudit.reconcile.plan.comparison import kept_partitions
from kaudit.reconcile.spark import _gc_options, out_of_memory


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


def test_a_run_spark_could_not_give_memory_is_exit_3_with_the_setting_to_raise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # What a 100 M record run on 1 GiB executors raised (Py4J's text, the trace cut).
    seen = RuntimeError("An error occurred while calling o1334.collectToPython.\n"
                        ": org.apache.spark.SparkException: Can't acquire 1049600 bytes "
                        "memory to build hash relation, got 1041386 bytes.\n\tat org.apache")
    error = out_of_memory(seen, "spark://10.0.0.1:7077")
    assert error is not None and error.exit_code == ExitCode.UNREACHABLE
    assert error.message == (
        "Spark ran out of memory (org.apache.spark.SparkException: Can't acquire 1049600 "
        "bytes memory to build hash relation, got 1041386 bytes.); give it more: "
        "spark.executor.memory in spark-defaults.conf (SPARK_CONF_DIR)")
    monkeypatch.setenv("KAUDIT_SPARK_DRIVER_MEMORY", "6g")
    heap = out_of_memory(RuntimeError("java.lang.OutOfMemoryError: Java heap space"),
                         "local[*]")
    assert heap is not None and heap.message.endswith("KAUDIT_SPARK_DRIVER_MEMORY (now 6g)")
    # Any other failure stays what it is.
    assert out_of_memory(RuntimeError("AnalysisException: no such column"), "local[*]") is None


def test_the_kept_set_has_a_task_per_core_or_per_40_shuffle_partitions() -> None:
    assert kept_partitions(2, None) == 2
    assert kept_partitions(2, 8) == 2
    assert kept_partitions(2, 80) == 2      # 10 M records: as every run before
    assert kept_partitions(2, 800) == 20    # 100 M records: 40 shuffle partitions a task
    assert kept_partitions(16, 800) == 20
    assert kept_partitions(0, 3) == 1
