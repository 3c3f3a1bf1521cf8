"""Topic definitions checked before they are applied: Strimzi manifests and snapshots.

``--manifests PATH`` takes files or directories. YAML files may hold many
documents (a Kubernetes folder holds all kinds): ``KafkaTopic`` resources are
read, other kinds are skipped. ``.json`` files are kaudit snapshots. The
result is one :class:`ClusterSnapshot` with ``live=False`` when no snapshot
file supplies live state, so live-state rules stay quiet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from kaudit.cluster.model import (
    ClusterSnapshot,
    ConfigMap,
    ConfigSource,
    ConfigValue,
    Topic,
    freeze_configs,
    is_internal_topic,
    snapshot_from_dict,
)
from kaudit.errors import FileInputError, InputError
from kaudit.yamlnodes import NodeReader, line_of, read_text

_YAML_SUFFIXES = (".yaml", ".yml")
_SPEC_KEYS = ("partitions", "replicas", "config", "topicName")


def _files(paths: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*")
                              if p.is_file() and p.suffix in (*_YAML_SUFFIXES, ".json")))
        elif path.exists():
            out.append(path)
        else:
            raise InputError(f"--manifests {raw}: no such file or directory")
    return out


def _scalar_text(node: Node) -> str:
    if not isinstance(node, ScalarNode):
        raise TypeError
    value = str(node.value)
    # YAML booleans are written true/false in Kafka configs.
    return value.lower() if node.tag.endswith(":bool") else value


def _topic_from_node(doc: MappingNode, reader: NodeReader) -> Topic | None:
    entries = reader.mapping(doc, "the document")
    kind = entries.get("kind")
    if kind is None or not isinstance(kind[1], ScalarNode) or kind[1].value != "KafkaTopic":
        return None
    meta = reader.mapping(entries["metadata"][1] if "metadata" in entries else doc,
                          "metadata", required=("name",))
    if "spec" not in entries:
        raise reader.fail(doc, "KafkaTopic has no spec")
    spec_node = entries["spec"][1]
    spec = reader.mapping(spec_node, "spec", allowed=_SPEC_KEYS)
    name = (reader.text(spec["topicName"][1], "spec.topicName") if "topicName" in spec
            else reader.text(meta["name"][1], "metadata.name"))
    for key in ("partitions", "replicas"):
        if key not in spec:
            # Strimzi falls back to the broker defaults; we cannot know them offline.
            raise reader.fail(spec_node, f"KafkaTopic {name!r} has no spec.{key}",
                              hint="declare it so the topic can be checked before it exists")
    partitions = reader.integer(spec["partitions"][1], "spec.partitions", minimum=1)
    replicas = reader.integer(spec["replicas"][1], "spec.replicas", minimum=1)

    def at(key_node: Node) -> str:
        return f"{reader.path}:{line_of(key_node)}"

    # Each setting's own line, so a finding lands on the key to change (a missing one on
    # metadata.name), not on the first line of the document.
    settings_at = {"name": at(meta["name"][0]), "partition_count": at(spec["partitions"][0]),
                   "replication_factor": at(spec["replicas"][0])}
    configs: dict[str, ConfigValue] = {}
    if "config" in spec:
        for key, (key_node, value_node) in reader.mapping(spec["config"][1],
                                                          "spec.config").items():
            try:
                value = _scalar_text(value_node)
            except TypeError:
                raise reader.fail(value_node, f"spec.config.{key} must be a plain value") from None
            configs[key] = ConfigValue(name=key, value=value, source=ConfigSource.MANIFEST)
            settings_at[key] = at(key_node)
    return Topic(name=name, internal=is_internal_topic(name), partition_count=partitions,
                 replication_factor=replicas, configs=freeze_configs(configs),
                 settings_at=MappingProxyType(settings_at))


def _yaml_topics(path: Path) -> Iterable[tuple[Topic, int]]:
    """KafkaTopic resources in one (multi-document) YAML file, with their lines."""
    text = read_text(path)
    reader = NodeReader(str(path))
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise FileInputError(str(path), int(mark.line) + 1 if mark else None,
                             f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise FileInputError(str(path), None, f"invalid YAML: {exc}") from None
    for doc in docs:
        if doc is None or not isinstance(doc, MappingNode):
            continue
        topic = _topic_from_node(doc, reader)
        if topic is not None:
            yield replace(topic, declared_at=f"{path}:{line_of(doc)}"), line_of(doc)


def load_manifests(paths: Sequence[str], *, allow_empty: bool = False) -> ClusterSnapshot:
    """Read KafkaTopic manifests and snapshot files into one offline snapshot.

    Finding no topic at all is an input error unless ``allow_empty`` (a
    pre-commit hook is handed whatever YAML files a commit touched).
    """
    topics: dict[str, tuple[Topic, str]] = {}
    base: ClusterSnapshot | None = None

    def add(topic: Topic, where: str) -> None:
        if topic.name in topics:
            path, _, line = where.rpartition(":")
            raise FileInputError(path, int(line) if line.isdigit() else None,
                                 f"topic {topic.name!r} is declared twice "
                                 f"(also at {topics[topic.name][1]})")
        topics[topic.name] = (topic, where)

    for path in _files(paths):
        if path.suffix == ".json":
            snap = load_snapshot_file(str(path))
            if base is None:
                base = snap
            for topic in snap.topics:
                add(topic, f"{path}:1")
        elif path.suffix in _YAML_SUFFIXES:
            for topic, line in _yaml_topics(path):
                add(topic, f"{path}:{line}")
        else:
            raise InputError(f"--manifests {path}: expected .yaml, .yml or .json")
    if not topics and not allow_empty:
        raise InputError("--manifests: no KafkaTopic resources or snapshot topics found in "
                         + ", ".join(paths))
    ordered = tuple(t for t, _ in sorted(topics.values(), key=lambda tw: tw[0].name))
    if base is not None:
        return ClusterSnapshot(
            cluster_id=base.cluster_id, controller_id=base.controller_id, brokers=base.brokers,
            broker_configs=base.broker_configs, topics=ordered, taken_at=base.taken_at,
            origin="manifests", live=base.live, unreadable=base.unreadable)
    return ClusterSnapshot(
        cluster_id=None, controller_id=None, brokers=(),
        broker_configs=MappingProxyType({}), topics=ordered,
        taken_at=datetime.now(UTC).isoformat(timespec="seconds"),
        origin="manifests", live=False)


def load_snapshot_file(path: str) -> ClusterSnapshot:
    """Read a ``kaudit snapshot`` file; a bad one is an input error naming the file."""
    text = read_text(path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FileInputError(path, exc.lineno, f"not valid JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        kind = {list: "an array", str: "a string", bool: "true or false",
                type(None): "null"}.get(type(raw), "a number")
        raise FileInputError(path, None, f"not a kaudit snapshot: the document is {kind}, "
                             "not an object with \"schema\": \"kaudit.snapshot/v1\"")
    try:
        return snapshot_from_dict(raw, origin=f"snapshot:{path}")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        detail = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise FileInputError(path, None, f"not a kaudit snapshot: {detail}") from None


__all__ = ["ConfigMap", "load_manifests", "load_snapshot_file"]
