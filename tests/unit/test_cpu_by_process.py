"""The CPU-by-process tool names each kind of process the tier runs by its command line."""

from __future__ import annotations

import pytest

from tests.cpu_by_process import kind


@pytest.mark.parametrize("argv,expected", [
    (["/usr/bin/java", "-Xmx512m", "-Dkaudit.lab.node=/tmp/lab/broker-2", "kafka.Kafka"],
     "lab broker"),
    (["java", "-Dkaudit.lab.node=/tmp/lab/controller-100/", "kafka.Kafka"], "lab controller"),
    (["java", "-Dkaudit.lab.node=/tmp/lab/connect-1",
      "org.apache.kafka.connect.cli.ConnectDistributed"], "Connect worker"),
    (["java", "-cp", "x", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"],
     "Spark driver"),
    (["java", "org.apache.spark.executor.CoarseGrainedExecutorBackend"], "Spark executor"),
    (["java", "-cp", "x", "org.apache.kafka.tools.TopicCommand"],
     "Kafka's tools and other JVMs"),
    (["/usr/bin/python3", "-m", "pytest", "-m", "kafka"], "pytest"),
    (["python3", "-u", "-c", "import sys;exec(eval(sys.stdin.readline()))"], "pytest"),
    (["python3", "-m", "kaudit", "probe", "-b", "x"], "kaudit CLI"),
    (["python3", "-m", "kaudit.probe.share.worker"], "kaudit workers"),
    (["/usr/lib/postgresql/15/bin/postgres", "-D", "x"], "PostgreSQL"),
    (["bash", "kafka-run-class.sh"], "bash"),
    ([], "unknown"),
])
def test_each_process_is_named_by_its_kind(argv: list[str], expected: str) -> None:
    assert kind(argv) == expected
