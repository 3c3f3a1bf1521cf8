"""The JVM options kaudit's own Spark session starts with."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

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
