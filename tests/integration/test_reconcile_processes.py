"""kaudit reconcile as a process of its own, as a user runs it: with bad input, with jars that
lack the Kafka source, on a standalone Spark master. None needs the suite's Spark session,
so CI runs them in the probes share, which starts none: it evens out the shares' times (the
data share, where the other reconcile tests run, is the longest)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit
from tests.integration.test_reconcile import MISSING, N, amount, keys_of, reconcile
from tests.integration.test_reconcile import topic as topic  # the module's orders topic

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


@pytest.mark.probes_share
def test_bad_input_is_exit_2_before_spark_starts(lab: Lab, topic: dict[str, Any],
                                                 tmp_path: Path) -> None:
    cases = [
        (["--sink", "mysql:whatever"], "expected jdbc:"),
        (["--sink", "jdbc:postgresql://h:1/db"], "?table="),
        (["--sink", f"parquet:{tmp_path / 'nope'}"], "does not exist"),
        (["--sink", f"json:{tmp_path}", "--from", "{not json"], "not valid JSON"),
        (["--sink", f"json:{tmp_path}", "--from", '{"9": 1}'], "no partition 9"),
        # A misspelt field: of the 300 values (the aborted ones and the tombstones are not
        # read) none has it.
        (["--sink", f"json:{tmp_path}", "--key", "id", "--compare", "status,amout"],
         "values have no field 'amout' in the 300 records sampled"),
        (["--sink", f"json:{tmp_path}", "--key", "customer.idx"],
         "fields: amount, customer, customer.id, id, status"),
    ]
    for extra, message in cases:
        result = run_kaudit("reconcile", "-b", lab.bootstrap, "--topic", topic["name"], *extra)
        assert result.code == 2, (extra, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.probes_share
def test_jars_without_the_kafka_source_are_exit_3_with_what_to_give(
        lab: Lab, topic: dict[str, Any], tmp_path: Path) -> None:
    # A jar that exists but is not the connector: Spark starts and has no "kafka" source.
    import pyspark

    some_jar = sorted((Path(pyspark.__file__).parent / "jars").glob("*.jar"))[0]
    sink = tmp_path / "s.jsonl"
    sink.write_text(json.dumps({"id": 1, "status": "new"}) + "\n")
    # Its own process: the suite's running Spark session already has the connector.
    result = run_kaudit("reconcile", "-b", lab.bootstrap, "--topic", topic["name"], "--sink",
                        f"json:{sink}", "--key", "id", "--jars", str(some_jar), timeout=600)
    code, stderr = result.code, result.stderr
    assert code == 3, stderr
    assert stderr.startswith("kaudit: error: Spark has no Kafka source: the jars given with "
                             "--jars must include spark-sql-kafka-0-10")
    assert stderr.count("\n") == 1


@pytest.fixture(scope="module")
def spark_master(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real standalone Spark master and one worker, started from the pyspark install."""
    import os
    import socket
    import time

    import pyspark

    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    ports = []
    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    port, master_ui, worker_ui = ports
    logs = tmp_path_factory.mktemp("spark-standalone")
    # The master and the worker only hand out and watch executors: compiled with C1 alone,
    # they start on less CPU (the executors they launch take the application's options).
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
               SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1")
    url = f"spark://127.0.0.1:{port}"
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(master_ui)],
        stdout=open(logs / "master.log", "w"), stderr=subprocess.STDOUT, env=env)  # noqa: SIM115
    worker = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
         "--cores", "2", "--memory", "2g", "--webui-port", str(worker_ui),
         "--work-dir", str(logs / "work")],
        stdout=open(logs / "worker.log", "w"), stderr=subprocess.STDOUT, env=env)  # noqa: SIM115
    try:
        deadline = time.monotonic() + 120
        while "Registering worker" not in (logs / "master.log").read_text():
            assert time.monotonic() < deadline, (logs / "master.log").read_text()[-2000:]
            assert master.poll() is None and worker.poll() is None, "standalone Spark died"
            time.sleep(0.5)
        yield url
    finally:
        for proc in (worker, master):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.mark.probes_share
def test_runs_on_a_standalone_spark_master(lab: Lab, topic: dict[str, Any], spark_master: str,
                                           tmp_path: Path) -> None:
    sink = tmp_path / "partial.jsonl"
    sink.write_text("".join(json.dumps({"id": i, "status": "new", "amount": amount(i)}) + "\n"
                            for i in range(N) if i not in MISSING))
    code, doc, stderr = reconcile(lab, "--topic", topic["name"], "--sink", f"json:{sink}",
                                  "--key", "id", "--compare", "amount", "--master",
                                  spark_master, "--samples", "10")
    assert code == 1, stderr
    assert doc["counts"]["missing_in_sink"] == len(MISSING)
    assert keys_of(doc, "missing_in_sink") == MISSING
