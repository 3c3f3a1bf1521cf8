"""Kafka's own command-line tools (kafka-topics, kafka-configs, kafka-metadata-quorum...),
run from the lab's jars: the oracle many integration tests hold kaudit's reads against.

Each call is a JVM start. On two cores, with three test shares beside one another, every
one of them is CPU taken from the others, and most of a short tool's CPU is spent
compiling and loading classes: so C1 only (the tools' work is a request or two), the
serial collector (no GC threads for a heap of a few MB), and a class archive written by the
first call and mapped by every later one. What the tool prints is the same.
"""

from __future__ import annotations

import subprocess
import threading

from kaudit.jvm import ClassArchive

_lock = threading.Lock()
_archive: ClassArchive | None = None
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-XX:-UsePerfData",
               # The JVM's own warnings (writing the archive has some) never in the output.
               "-Xlog:disable", "-Xlog:all=error:stderr")


def kafka_tool(main_class: str, *args: str, timeout: float = 120, check: bool = True
               ) -> subprocess.CompletedProcess[str]:
    """Run ``main_class`` (e.g. ``org.apache.kafka.tools.TopicCommand``) with ``args``;
    its output as text. ``check``: a non-zero exit raises (with what it printed)."""
    from kaudit.lab.runtime import kafka_runtime

    global _archive
    runtime = kafka_runtime(None, None)
    with _lock:
        if _archive is None:
            _archive = ClassArchive("kafka-tools", runtime.java,
                                    [runtime.classpath, *JVM_OPTIONS])
        archive_options = _archive.options()
    done = subprocess.run([runtime.java, *JVM_OPTIONS, *archive_options, "-cp",
                           runtime.classpath, main_class, *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    with _lock:
        _archive.publish(done.returncode)
    if check and done.returncode != 0:
        raise AssertionError(f"{main_class} {' '.join(args)} exited {done.returncode}: "
                             f"{done.stderr[-2000:]}")
    return done
