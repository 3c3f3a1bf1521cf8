"""Kafka's finalized features: metadata.version, eligible.leader.replicas.version (ELR,
KIP-966), transaction.version (KIP-890) and group.version (KIP-848).

librdkafka has no DescribeFeatures, so they are read with Kafka's own FeatureCommand from
the Kafka jars kaudit already keeps for the lab (``~/.cache/kaudit/kafka/VERSION/libs``),
on Java 17+, in a process started before the rest of the cluster is read and collected
after it, so the JVM's start costs little. Nothing is ever guessed: where Java or the jars
are missing, or the command fails, the snapshot has no features and says why.
"""

from __future__ import annotations

import re
import subprocess

from kaudit.cluster.client import java_client_options
from kaudit.connect.properties import properties_text
from kaudit.connect.redact import redact
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import RuntimeUnavailable
from kaudit.jvm import cache_dir, find_java

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
#: Seconds the JVM may take on top of the connection timeout.
JVM_SECONDS = 30
_LINE = re.compile(r"^Feature:\s*(\S+)\s.*?FinalizedVersionLevel:\s*(\S+)", re.M)


def parse_features(text: str) -> dict[str, str]:
    """``kafka-features describe`` output -> finalized level by feature name (a level of
    ``-`` or a feature the cluster has not finalized is left out)."""
    return {name: level for name, level in _LINE.findall(text) if level not in ("-", "")}


def tools_classpath() -> str | None:
    """The newest cached Kafka release with kafka-tools, as a Java classpath."""
    root = cache_dir() / "kafka"
    found = sorted((p for p in root.glob("*/libs") if any(p.glob("kafka-tools-*.jar"))),
                   key=lambda p: [int(x) if x.isdigit() else 0
                                  for x in re.split(r"[.-]", p.parent.name)])
    return f"{found[-1].resolve()}/*" if found else None


class FeatureReader:
    """Starts Kafka's FeatureCommand at once; :meth:`result` waits for its answer."""

    def __init__(self, settings: ConnectionSettings) -> None:
        self.reason: str | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._timeout = settings.timeout + JVM_SECONDS
        classpath = tools_classpath()
        if classpath is None:
            self.reason = ("needs Kafka's jars in kaudit's cache (`kaudit lab up` fetches "
                           "them once)")
            return
        try:
            java = find_java()
        except RuntimeUnavailable as exc:
            self.reason = f"needs Java 17+ ({exc})"
            return
        wait_ms = str(int(settings.timeout * 1000))
        options = {k: v for k, v in java_client_options(settings).items()
                   if k != "bootstrap.servers"}
        # Kafka's Admin client waits a minute by default; kaudit's --timeout bounds it.
        options.update({"default.api.timeout.ms": wait_ms, "request.timeout.ms": wait_ms})
        # The connection's settings (secrets included) reach the JVM through a pipe read as
        # the command config: nothing is written to disk, so nothing can be left behind.
        command = [java, "-cp", classpath, FEATURE_COMMAND, "--bootstrap-server",
                   settings.bootstrap_servers, "--command-config", "/dev/stdin", "describe"]
        try:
            self._proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, stdin=subprocess.PIPE,
                                          text=True, encoding="ascii")
            assert self._proc.stdin is not None
            self._proc.stdin.write(properties_text(options))
            self._proc.stdin.close()
            self._proc.stdin = None  # written and closed: communicate() has nothing to send
        except OSError as exc:
            self.reason = f"cannot run Java: {exc.__class__.__name__}"
            self.close()

    def result(self) -> tuple[dict[str, str] | None, str | None]:
        """The finalized features, or None and why they were not read."""
        if self._proc is None:
            return None, self.reason
        try:
            out, err = self._proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            self.close()
            return None, f"Kafka's FeatureCommand gave no answer within {self._timeout:g}s"
        features = parse_features(out)
        if self._proc.returncode != 0 or not features:
            lines = [ln.strip() for ln in (err or out).splitlines() if ln.strip()]
            why = next((ln for ln in lines if "Error" in ln or "Exception" in ln),
                       lines[-1] if lines else f"exit code {self._proc.returncode}")
            return None, f"Kafka's FeatureCommand failed: {redact(why)[:200]}"
        return features, None

    def __enter__(self) -> FeatureReader:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the command if it still runs (the rest of the read failed)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.communicate()
