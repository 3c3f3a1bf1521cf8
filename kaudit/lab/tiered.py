"""Tiered storage (KIP-405) on the lab's brokers, with Kafka's own ``LocalTieredStorage``.

``LocalTieredStorage`` is the remote storage manager Kafka's tiered-storage tests use: it
"uploads" a segment by copying its files into a directory, here one shared by every
broker of the lab (as a bucket would be). It ships in Kafka's test jars
(``kafka-storage:VERSION:test`` and ``kafka-clients:VERSION:test``), fetched with Maven
into the jar cache like the lab's other jars and loaded through
``remote.log.storage.manager.class.path``: a class loader of its own, so the brokers'
classpath (and the class archive they start from) stays the one every lab uses.

Remote log metadata is Kafka's default, the ``__remote_log_metadata`` topic.
"""

from __future__ import annotations

from pathlib import Path

from kaudit.jvm import resolve_jars

STORAGE_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
STORAGE_DIR = "tiered-storage"
"""The shared "remote" storage, under the lab's state directory."""
REMOTE_ROOT = "kafka-tiered-storage"
"""The folder LocalTieredStorage keeps its topic-partitions in, inside its ``dir``."""

COPY_INTERVAL_MS = 2000
"""How often a leader looks for segments to copy (Kafka's default: 30 s), so that a lab
shows a rolled segment in remote storage within seconds."""

METADATA_PARTITIONS = 5
"""``__remote_log_metadata``'s partitions (Kafka's default: 50): a lab's handful of tiered
partitions needs few, and each is three replicas to create while the lab starts."""


CONTROLLER_PROPERTIES = {"remote.log.storage.system.enable": "true"}
"""What a controller needs: it validates a new topic's configs against its own, and refuses
``remote.storage.enable=true`` unless tiered storage is on (it copies no segment itself)."""


def storage_jars(kafka_version: str, *, progress: bool = False) -> Path:
    """The folder with Kafka ``kafka_version``'s LocalTieredStorage and what it needs
    beyond a broker's own classpath (fetched once)."""
    return resolve_jars(
        f"kafka/{kafka_version}-tiered",
        [("org.apache.kafka", "kafka-storage", kafka_version, "test"),
         ("org.apache.kafka", "kafka-clients", kafka_version, "test")],
        what=f"Kafka {kafka_version}'s LocalTieredStorage (its test jars)",
        marker="kafka-storage-*-test.jar", progress=progress, transitive=False)


def remote_root(state_dir: str | Path) -> Path:
    """Where the lab's remote segments are: one folder per topic-partition."""
    return Path(state_dir) / STORAGE_DIR / REMOTE_ROOT


def broker_properties(state_dir: Path, jars: Path, broker_count: int,
                      listener: str) -> dict[str, str]:
    """The settings that turn tiered storage on for a broker of the lab; ``listener`` is
    the one the remote log metadata manager's clients use (the brokers' own)."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": STORAGE_CLASS,
        "remote.log.storage.manager.class.path": f"{jars.resolve()}/*",
        # rsm.config. is Kafka's prefix for the storage manager's own settings: with a
        # dir, LocalTieredStorage needs none of Kafka's test utilities.
        "rsm.config.dir": str((state_dir / STORAGE_DIR).resolve()),
        "remote.log.metadata.manager.listener.name": listener,
        "remote.log.manager.task.interval.ms": str(COPY_INTERVAL_MS),
        # rlmm.config. is the prefix for the metadata manager's settings.
        "rlmm.config.remote.log.metadata.topic.num.partitions": str(METADATA_PARTITIONS),
    } | _metadata_topic_fitting(broker_count)


def _metadata_topic_fitting(broker_count: int) -> dict[str, str]:
    """``__remote_log_metadata``'s replication where the lab is too small for Kafka's
    defaults (3 replicas, min.insync.replicas 2); a bigger lab keeps them, as a real
    cluster would (a rule reads them from the topic)."""
    fitting = {}
    if broker_count < 3:
        fitting["rlmm.config.remote.log.metadata.topic.replication.factor"] = str(broker_count)
    if broker_count < 2:
        fitting["rlmm.config.remote.log.metadata.topic.min.isr"] = "1"
    return fitting
