"""KA111-KA114 and KA320-KA321: tiered storage (KIP-405), from the topic and broker configs.

A topic with ``remote.storage.enable=true`` keeps its older segments in remote storage and
only ``local.retention.*`` of them on the brokers' disks. The brokers check these settings
when a topic's configs are set, but not when a default they inherit changes, nor on a
broker restarted with other settings: the rules judge what the cluster holds now. A value
the snapshot lacks (a manifest that leaves it out) is not guessed: the rule says nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import (
    as_bool,
    as_int,
    provenance,
    topic_subject,
    topic_value,
)
from kaudit.check.rules.registry import ClusterContext, TopicContext, Violation, rule
from kaudit.cluster.model import ConfigValue, Topic

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


def _own(topic: Topic, name: str) -> ConfigValue | None:
    value = topic.config(name)
    return value if value is not None and value.value is not None else None


def _tiered(topic: Topic) -> ConfigValue | None:
    """The topic's ``remote.storage.enable`` when it is true."""
    value = _own(topic, "remote.storage.enable")
    return value if value is not None and as_bool(value) else None


def _said(value: ConfigValue) -> str:
    return f"{value.name}={value.value} ({provenance(value)})"


@rule("KA111", "topic.tiered-local-retention-exceeds-retention", Severity.warning,
      "A tiered topic keeps more on the brokers' disks (local.retention) than in total "
      "(retention).", scope="topic",
      what="For a topic with `remote.storage.enable=true`, compares `local.retention.ms` with "
           "`retention.ms` and `local.retention.bytes` with `retention.bytes`, as Kafka "
           "does: `-2` means \"the same as retention\" and is always fine, a retention of "
           "`-1` (unlimited) allows any local retention, and a local `-1` (unlimited) or a "
           "local value above the retention is wrong.",
      why="Local retention is the part of the retention kept on the brokers' disks as well; "
          "more than the whole retention means nothing (the records are deleted at "
          "`retention.*` anyway) and says the topic is not set up as its owners think. "
          "Kafka refuses these values when the topic's configs are set (\"Value must not be "
          "more than retention.ms property value\"), so they come from a default the topic "
          "inherits that changed since, and the topic's next config change is refused.",
      example="`remote.storage.enable=true`, `retention.ms=86400000` and "
              "`local.retention.ms=604800000` (a week on disk, a day in all).",
      fix="Set `local.retention.ms` (and `.bytes`) to at most the retention, or to `-2`.")
def local_retention_exceeds_retention(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """local.retention.ms/bytes above retention.ms/bytes on a tiered topic."""
    if _tiered(topic) is None:
        return
    for unit in ("ms", "bytes"):
        local, total = _own(topic, f"local.retention.{unit}"), _own(topic, f"retention.{unit}")
        if local is None or total is None:
            continue
        kept, whole = as_int(local, -2), as_int(total, -1)
        if kept == -2 or whole == -1 or (kept != -1 and kept <= whole):
            continue
        beyond = "keeps everything" if kept == -1 else "keeps more"
        yield Violation(topic_subject(topic),
                        f"Tiered topic {topic.name} {beyond} on the brokers' disks "
                        f"({_said(local)}) than in all ({_said(total)}): the local retention "
                        f"means nothing, and Kafka refuses the topic's next config change "
                        f"until it is at most retention.{unit} or -2.",
                        expected=f"-2 or <= {whole}", actual=str(local.value),
                        source=local.source.value, topic=topic.name,
                        declared_at=topic.setting_at(local.name))


@rule("KA112", "topic.tiered-compacted", Severity.error,
      "A compacted topic has tiered storage on, which Kafka does not support.", scope="topic",
      what="Reports a topic whose `cleanup.policy` contains `compact` and whose "
           "`remote.storage.enable` is true.",
      why="Tiered storage supports only topics with `cleanup.policy=delete`: Kafka's "
          "documentation lists compacted topics among its limitations, and the brokers "
          "refuse `remote.storage.enable=true` on a compacted topic (\"Remote log storage "
          "only supports topics with cleanup.policy=delete\", seen on the lab). A topic that "
          "holds both got there through an inherited default or an older broker, and runs "
          "in a combination Kafka neither supports nor tests: what it keeps of each key is "
          "no longer what compaction promises.",
      example="`cleanup.policy=compact,delete` with `remote.storage.enable=true`.",
      fix="Keep the compacted topic local (`remote.storage.enable=false` with "
          "`remote.log.delete.on.disable=true`, after copying what remote storage holds "
          "if it is still needed), or make it `cleanup.policy=delete`.")
def tiered_compacted(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """cleanup.policy contains compact on a tiered topic."""
    tiered, policy = _tiered(topic), _own(topic, "cleanup.policy")
    if tiered is None or policy is None:
        return
    if "compact" in [p.strip().lower() for p in str(policy.value).split(",")]:
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} is compacted ({_said(policy)}) and tiered "
                        f"({_said(tiered)}): Kafka supports tiered storage only with "
                        "cleanup.policy=delete.",
                        expected="cleanup.policy=delete", actual=str(policy.value),
                        source=policy.source.value, topic=topic.name,
                        declared_at=topic.setting_at("cleanup.policy"))


@rule("KA113", "topic.tiered-remote-delete-armed", Severity.warning,
      "A tiered topic stopped copying to remote storage, and turning tiering off would "
      "delete what is there.", scope="topic",
      what="Reports a topic with `remote.storage.enable=true`, `remote.log.copy.disable=true` "
           "and `remote.log.delete.on.disable=true` (KIP-950).",
      why="`remote.log.copy.disable=true` makes the remote data read-only: kept, no longer "
          "added to. `remote.log.delete.on.disable=true` is what lets "
          "`remote.storage.enable=false` go through, and it then deletes every remote "
          "segment: every record older than the local log. Together they leave the topic "
          "one config change away from losing that data, whoever makes it.",
      example="`remote.log.copy.disable=true` and `remote.log.delete.on.disable=true` on a "
              "topic that still reads old records from remote storage.",
      fix="Set `remote.log.delete.on.disable=false` while the remote data is to be kept; set "
          "it together with `remote.storage.enable=false` only when it is to go.")
def tiered_remote_delete_armed(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """remote.log.copy.disable=true with remote.log.delete.on.disable=true."""
    copy_off = _own(topic, "remote.log.copy.disable")
    delete_on = _own(topic, "remote.log.delete.on.disable")
    if (_tiered(topic) is None or copy_off is None or delete_on is None
            or not as_bool(copy_off) or not as_bool(delete_on)):
        return
    yield Violation(topic_subject(topic),
                    f"Topic {topic.name} keeps its remote data read-only ({_said(copy_off)}) "
                    f"with {_said(delete_on)}: the next remote.storage.enable=false deletes "
                    "every remote segment, and the records older than the local log with "
                    "them.",
                    expected="remote.log.delete.on.disable=false", actual="true",
                    source=delete_on.source.value, topic=topic.name,
                    declared_at=topic.setting_at("remote.log.delete.on.disable"))


@rule("KA114", "topic.tiered-without-broker-support", Severity.error,
      "A tiered topic is on brokers that have tiered storage off.", scope="topic",
      what="For a topic with `remote.storage.enable=true`, reports the brokers whose "
           "`remote.log.storage.system.enable` is false (Kafka's default).",
      why="A broker with tiered storage off treats the topic as local only: it copies "
          "nothing to remote storage and cannot serve the records already there, so "
          "consumers reading old offsets from it fail. Kafka refuses to create such a topic "
          "(\"Tiered Storage functionality is disabled in the broker\"); a broker restarted "
          "without the setting, or a partial rollout, leaves it so.",
      example="`remote.storage.enable=true` on a topic, and a broker restarted without "
              "`remote.log.storage.system.enable=true` in its server.properties.",
      fix="Set `remote.log.storage.system.enable=true` (with the remote storage and "
          "metadata managers) on every broker, and restart those that lack it.")
def tiered_without_broker_support(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """remote.storage.enable=true with brokers whose remote.log.storage.system.enable is
    false (only brokers whose configs were read are judged)."""
    tiered = _tiered(topic)
    if tiered is None:
        return
    name = "remote.log.storage.system.enable"
    off = {bid: value for bid, configs in sorted(ctx.snapshot.broker_configs.items())
           if (value := configs.get(name)) is not None and value.value is not None
           and not as_bool(value)}
    if not off:
        return
    first = next(iter(off.values()))
    brokers = ("broker " if len(off) == 1 else "brokers ") + ", ".join(str(b) for b in off)
    every = len(off) == len(ctx.snapshot.broker_configs)
    yield Violation(topic_subject(topic),
                    f"Topic {topic.name} is tiered ({_said(tiered)}) but "
                    f"{'every broker' if every else brokers} "
                    f"{'has' if every or len(off) == 1 else 'have'} {name}=false "
                    f"({provenance(first)}): {'it copies' if len(off) == 1 else 'they copy'} "
                    "nothing to remote storage and cannot serve the records already there.",
                    expected=f"{name}=true on every broker",
                    actual=f"false on {brokers}", source=first.source.value,
                    topic=topic.name)


def _metadata_topic(ctx: ClusterContext) -> Topic | None:
    return next((t for t in ctx.snapshot.topics if t.name == REMOTE_LOG_METADATA_TOPIC), None)


@rule("KA320", "internal.remote-log-metadata-replication-factor", Severity.error,
      "The index of remote segments (__remote_log_metadata) is kept with too few replicas.",
      scope="cluster",
      what="Checks the replication factor of `__remote_log_metadata`, when it exists, "
           "against the default profile's `min_replication_factor` (3 for `durable`).",
      why="`__remote_log_metadata` is where the brokers record which segments of every "
          "tiered topic are in remote storage. Lose it and the brokers no longer know those "
          "segments: the records in them are as good as gone, though the remote storage "
          "still holds them.",
      example="`rlmm.config.remote.log.metadata.topic.replication.factor=1`, from a setup "
              "with one broker.",
      fix="Reassign `__remote_log_metadata` to 3 replicas (`kafka-reassign-partitions`), and "
          "keep `rlmm.config.remote.log.metadata.topic.replication.factor` at 3.")
def remote_log_metadata_replication_factor(ctx: ClusterContext) -> Iterator[Violation]:
    """__remote_log_metadata RF below the floor."""
    topic, floor = _metadata_topic(ctx), ctx.thresholds.min_replication_factor
    if topic is None or topic.replication_factor >= floor:
        return
    rf = topic.replication_factor
    fail = "its only broker fails" if rf <= 1 else f"{rf} brokers fail"
    yield Violation(Subject(SubjectKind.topic, topic.name),
                    f"{topic.name} has replication factor {rf}, so the index of every "
                    f"remote segment is lost when {fail}.",
                    expected=f">= {floor}", actual=str(rf), source="replication factor",
                    topic=topic.name)


@rule("KA321", "internal.remote-log-metadata-min-isr", Severity.error,
      "__remote_log_metadata accepts writes acknowledged by too few replicas.",
      scope="cluster",
      what="Checks the effective `min.insync.replicas` of `__remote_log_metadata`, when it "
           "exists, against the default profile's `min_insync_replicas` (2 for `durable`).",
      why="Before Kafka 4.3 the brokers created `__remote_log_metadata` without a "
          "min.insync.replicas of its own, so it inherited the brokers' default, usually 1 "
          "(KAFKA-19858): a record of a copied segment acknowledged by its leader alone is "
          "lost with that broker, and with it the way to the segment. Kafka 4.3 creates "
          "the topic with min.insync.replicas=2 "
          "(`rlmm.config.remote.log.metadata.topic.min.isr`, KIP-1235); a topic created "
          "before the upgrade keeps what it had.",
      example="`__remote_log_metadata` created by Kafka 3.9, inheriting "
              "min.insync.replicas=1.",
      fix="`kafka-configs --alter --entity-type topics --entity-name __remote_log_metadata "
          "--add-config min.insync.replicas=2` (with replication factor 3).")
def remote_log_metadata_min_isr(ctx: ClusterContext) -> Iterator[Violation]:
    """__remote_log_metadata min.insync.replicas below the floor."""
    topic, floor = _metadata_topic(ctx), ctx.thresholds.min_insync_replicas
    if topic is None:
        return
    value = topic_value(topic, ctx.snapshot, "min.insync.replicas")
    min_isr = max(1, as_int(value, 1))
    if min_isr >= floor:
        return
    who = "its leader alone" if min_isr == 1 else f"{min_isr} replicas"
    yield Violation(Subject(SubjectKind.topic, topic.name),
                    f"{topic.name} has min.insync.replicas={min_isr} "
                    f"({provenance(value, ctx.snapshot)}): a record of a copied segment can "
                    f"be acknowledged by {who} and lost with it, and the segment's records "
                    "with it.",
                    expected=f">= {floor}", actual=str(min_isr), source=value.source.value,
                    topic=topic.name)
