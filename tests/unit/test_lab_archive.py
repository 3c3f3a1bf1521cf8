"""The lab's class archive: brokers write it as they stop cleanly, every Kafka JVM of the lab
reads it once it is there, and a broker killed on its way out publishes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kaudit.lab.process import archive_options, kafka_archive, stop_nodes
from kaudit.lab.state import LabNode

# A stand-in for a broker JVM told to write its archive: on SIGTERM it writes the file
# named on its command line and exits, as the JVM does on its way out.
_WRITES_ON_TERM = ("import signal, sys, time\n"
                   "def out(*_):\n"
                   "    open(sys.argv[1], 'wb').write(b'classes'); sys.exit(143)\n"
                   "signal.signal(signal.SIGTERM, out)\n"
                   "print('ready', flush=True); time.sleep(60)")


@pytest.fixture()
def libs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS"):
        monkeypatch.delenv(var, raising=False)
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-4.3.1.jar").write_bytes(b"jar")
    return libs


def _node(tmp_path: Path, libs: Path, node_id: int, role: str) -> LabNode:
    argv = [sys.executable, "-Xmx512m", "-cp", f"{libs}/*", "kafka.Kafka", "server.properties"]
    return LabNode(id=node_id, role=role, port=1, directory=str(tmp_path / f"{role}-{node_id}"),
                   argv=argv)


def test_brokers_write_it_and_every_kafka_jvm_reads_it_once_there(tmp_path: Path,
                                                                  libs: Path) -> None:
    broker, controller = _node(tmp_path, libs, 1, "broker"), _node(tmp_path, libs, 100,
                                                                   "controller")
    worker = LabNode(id=200, role="connect", port=2, directory=str(tmp_path / "connect"),
                     argv=broker.argv)
    [write] = archive_options(broker)
    assert broker.archive_partial is not None
    assert write == f"-XX:ArchiveClassesAtExit={broker.archive_partial}"
    assert archive_options(controller) == [] and controller.archive_partial is None
    assert archive_options(worker) == []  # its own classpath: no archive
    archive = kafka_archive(broker.argv)
    assert archive is not None
    archive.path.parent.mkdir(parents=True, exist_ok=True)
    archive.path.write_bytes(b"classes")
    for node in (broker, controller):
        assert archive_options(node) == [f"-XX:SharedArchiveFile={archive.path}"]
        assert node.archive_partial is None


def test_the_archive_follows_the_jars(libs: Path) -> None:
    argv = [sys.executable, "-cp", f"{libs}/*", "kafka.Kafka"]
    first = kafka_archive(argv)
    assert first is not None
    jar = libs / "kafka_2.13-4.3.1.jar"
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 10**9))
    second = kafka_archive(argv)
    assert second is not None and second.path != first.path  # a jar replaced in place
    assert kafka_archive([sys.executable, "kafka.Kafka"]) is None  # no classpath named


def _started(node: LabNode) -> subprocess.Popen[str]:
    assert node.archive_partial is not None
    proc = subprocess.Popen([sys.executable, "-c", _WRITES_ON_TERM, node.archive_partial,
                             node.marker], stdout=subprocess.PIPE, text=True)
    # Until the child has exec'd, its command line is still ours, without the marker.
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    node.pid = proc.pid
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_only_a_clean_stop_publishes_what_the_broker_wrote(tmp_path: Path, libs: Path,
                                                           sig: signal.Signals) -> None:
    node = _node(tmp_path, libs, 1, "broker")
    archive_options(node)
    partial = Path(node.archive_partial or "")
    proc = _started(node)
    if sig is signal.SIGKILL:
        partial.write_bytes(b"half")  # a JVM killed halfway through writing
    try:
        assert stop_nodes([node], sig, wait_s=30) == []
    finally:
        proc.kill()
        proc.wait()
    archive = kafka_archive(node.argv)
    assert archive is not None and node.archive_partial is None and not partial.exists()
    assert archive.path.exists() is (sig is signal.SIGTERM)


def test_a_partial_outside_the_archives_folder_is_never_moved(tmp_path: Path,
                                                              libs: Path) -> None:
    node = _node(tmp_path, libs, 1, "broker")
    archive = kafka_archive(node.argv)
    assert archive is not None
    stray = tmp_path / "somewhere.jsa.partial"
    stray.write_bytes(b"not ours")
    archive.adopt(stray, complete=True)  # a lab.json edited by hand names it
    assert stray.exists() and not archive.path.exists()
