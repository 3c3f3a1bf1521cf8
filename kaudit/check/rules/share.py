"""KA61x: share groups (KIP-932, "queues for Kafka") and what they will never deliver.

A share group changes what "delivered" means: records are handed out under a time lock,
acknowledged one by one, delivered again after a release or an expired lock, and archived
unprocessed after ``share.delivery.count.limit`` deliveries. Its defaults surprise: a new
group starts at the log end (``share.auto.offset.reset=latest``) and is handed aborted
transactional records (``share.isolation.level=read_uncommitted``). A share group is judged
by the profile of each topic it reads, as consumer groups are (KA6xx). These rules read the
share groups the snapshot carries and skip snapshots without them.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import as_int, broker_value
from kaudit.check.rules.groups import duration
from kaudit.check.rules.registry import TopicContext, Violation, rule
from kaudit.cluster.model import (
    ClusterSnapshot,
    ConfigValue,
    ShareGroup,
    SharePartition,
    Topic,
)
from kaudit.cluster.share_configs import effective


def share_config(group: ShareGroup, snapshot: ClusterSnapshot, name: str) -> ConfigValue:
    """A share group's effective config (:func:`~kaudit.cluster.share_configs.effective`)."""
    return effective(name, group.configs.get(name), lambda synonym: broker_value(snapshot,
                                                                                 synonym))


def reads_topic(group: ShareGroup, topic: str) -> bool:
    """Whether the group reads ``topic``: its members subscribe to it or it holds state."""
    return any(s.topic == topic for s in group.partitions) or any(
        topic in m.subscribed for m in group.members)


def _readers(topic: Topic, snapshot: ClusterSnapshot) -> Iterator[ShareGroup]:
    for group in snapshot.share_groups or ():
        if reads_topic(group, topic.name):
            yield group


def share_subject(group: ShareGroup, topic: str, partition: int | None = None) -> Subject:
    """A share group on a topic or one partition: ``jobs@orders`` / ``jobs@orders-3``."""
    where = topic if partition is None else f"{topic}-{partition}"
    return Subject(SubjectKind.group, f"{group.group_id}@{where}")


def _states(group: ShareGroup, topic: str) -> Iterator[SharePartition]:
    return (s for s in group.partitions if s.topic == topic)


def _records(n: int) -> str:
    return f"{n} record{'s' if n != 1 else ''}"


@rule("KA611", "share.undelivered-records-deleted", Severity.error,
      "Records a share group had not finished with were deleted.",
      scope="topic",
      what="Reports share groups whose lag (the records they have not finished with, as "
           "the broker counts them) exceeds what the partition still holds after its "
           "start offset: retention or delete-records removed the rest. The count is the "
           "least that can have been lost, with the most.",
      why="Those records were written and acknowledged, and the group never finished with "
          "them: they were deleted first. No member sees an error. Kafka moves a share "
          "group's start offset lazily, so a start offset below the log start alone proves "
          "nothing: the lag does.",
      example="jobs lags 780 records on orders-3 from offset 120; the log starts at 500 and "
              "ends at 900: at least 380 records were deleted before jobs delivered them.",
      fix="Find why the group stopped (no members, a poison record, too few members); raise "
          "retention.ms on topics a share group can fall behind on.")
def undelivered_records_deleted(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """lag > high watermark - max(log start, start offset)."""
    for group in _readers(topic, ctx.snapshot):
        for state in _states(group, topic.name):
            ends = ctx.snapshot.partition_offsets(topic.name, state.partition)
            if ends is None or state.start_offset is None or state.lag is None \
                    or state.start_offset >= ends.log_start:
                continue
            least = state.lag - (ends.high_watermark - ends.log_start)
            if least <= 0:
                continue
            most = min(state.lag, ends.log_start - state.start_offset)
            told = _records(least) if most == least else \
                f"at least {_records(least)} (at most {most})"
            yield Violation(share_subject(group, topic.name, state.partition),
                            f"Share group {group.group_id} lags {_records(state.lag)} on "
                            f"{topic.name}-{state.partition} from offset "
                            f"{state.start_offset}, but the log keeps only "
                            f"{ends.high_watermark - ends.log_start} (from {ends.log_start}): "
                            f"{told} deleted before the group delivered them.",
                            expected=f"lag <= {ends.high_watermark - ends.log_start} records "
                                     "still in the log",
                            actual=f"lag {state.lag} ({told} deleted undelivered)",
                            source="share group offsets", topic=topic.name)


@rule("KA612", "share.read-uncommitted", Severity.error,
      "A share group hands out aborted transactional records on a topic whose profile "
      "demands read_committed readers.",
      scope="topic",
      what="Reports share groups reading a topic whose profile demands transactional "
           "producers or read_committed consumers while the group's share.isolation.level "
           "is read_uncommitted (Kafka's default).",
      why="A share group's members cannot choose their isolation level: the group config "
          "does. With read_uncommitted every record of an aborted transaction is delivered "
          "and processed as if it had been committed.",
      example="jobs reads payments (profile exactly-once) with share.isolation.level "
              "read_uncommitted (Kafka's default).",
      fix="kafka-configs.sh --alter --entity-type groups --entity-name GROUP --add-config "
          "share.isolation.level=read_committed")
def read_uncommitted(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """profile transactional and group isolation read_uncommitted."""
    demands = ctx.thresholds.producer_transactions or ctx.thresholds.consumer_read_committed
    if not demands:
        return
    for group in _readers(topic, ctx.snapshot):
        level = share_config(group, ctx.snapshot, "share.isolation.level")
        if str(level.value) == "read_committed":
            continue
        yield Violation(share_subject(group, topic.name),
                        f"Share group {group.group_id} reads {topic.name} with "
                        f"share.isolation.level {level.value}: records of aborted "
                        "transactions are delivered to its members.",
                        expected="share.isolation.level read_committed",
                        actual=f"share.isolation.level {level.value}",
                        source=level.source.value, topic=topic.name)


@rule("KA613", "share.starts-at-latest", Severity.warning,
      "A share group starts at the log end: records written before it first reads a "
      "partition are never delivered to it.",
      scope="topic",
      what="Reports share groups whose share.auto.offset.reset is latest (Kafka's default) "
           "on a topic whose profile does not accept loss, with how many records lie on the "
           "partitions where the group holds no state yet.",
      why="A share group takes its start on a partition when a member first fetches from "
          "it; with latest, everything already in the partition is skipped, silently. The "
          "same happens again if the group's state is deleted. How many records a group "
          "already skipped this way cannot be told afterwards: Kafka keeps no trace of it.",
      example="jobs reads orders with share.auto.offset.reset latest; orders-1 holds 5000 "
              "records and jobs has no state there: it will never deliver them.",
      fix="kafka-configs.sh --alter --entity-type groups --entity-name GROUP --add-config "
          "share.auto.offset.reset=earliest (before the first member starts).")
def starts_at_latest(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """profile not loss-accepting and group reset latest."""
    if ctx.thresholds.loss_accepted:
        return
    for group in _readers(topic, ctx.snapshot):
        reset = share_config(group, ctx.snapshot, "share.auto.offset.reset")
        if str(reset.value) != "latest":
            continue
        stated = {s.partition for s in _states(group, topic.name)
                  if s.start_offset is not None}
        waiting = 0
        for p in topic.partitions:
            ends = ctx.snapshot.partition_offsets(topic.name, p.partition)
            if p.partition not in stated and ends is not None:
                waiting += max(0, ends.high_watermark - ends.log_start)
        unstated = len(topic.partitions) - len(stated)
        told = (f"{_records(waiting)} on the {unstated} partition(s) where it holds no state "
                "yet will never be delivered to it" if waiting else
                "records written before it reached a partition were skipped")
        yield Violation(share_subject(group, topic.name),
                        f"Share group {group.group_id} reads {topic.name} from the log end "
                        f"(share.auto.offset.reset {reset.value}): {told}.",
                        expected="share.auto.offset.reset earliest",
                        actual=f"latest ({_records(waiting)} never to be delivered)"
                        if waiting else "latest",
                        source=reset.source.value, topic=topic.name)


@rule("KA614", "share.delivery-limit-low", Severity.warning,
      "A share group archives a record unprocessed after fewer deliveries than the topic's "
      "profile demands.",
      scope="topic",
      what="Reports share groups whose delivery count limit (share.delivery.count.limit, a "
           "group config from Kafka 4.3; group.share.delivery.count.limit on the brokers) is "
           "below the profile's share_min_delivery_attempts, with the brokers' allowed range.",
      why="A record released, or whose lock expired, that many times is archived: never "
          "delivered again, never processed, with no error to anyone. A low limit turns a "
          "few slow or crashing members into silent loss.",
      example="jobs archives a record after 2 deliveries; the durable profile demands 5 "
              "(the brokers allow 2 to 10).",
      fix="Raise share.delivery.count.limit on the group (kafka-configs.sh --entity-type "
          "groups), or group.share.delivery.count.limit on the brokers.")
def delivery_limit_low(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """delivery count limit < share_min_delivery_attempts."""
    wanted = ctx.thresholds.share_min_delivery_attempts
    if wanted <= 0:
        return
    low = broker_value(ctx.snapshot, "group.share.min.delivery.count.limit").value
    high = broker_value(ctx.snapshot, "group.share.max.delivery.count.limit").value
    allowed = f" (the brokers allow {low} to {high})" if low and high else ""
    for group in _readers(topic, ctx.snapshot):
        limit = share_config(group, ctx.snapshot, "share.delivery.count.limit")
        attempts = as_int(limit, 5)
        if attempts >= wanted:
            continue
        yield Violation(share_subject(group, topic.name),
                        f"Share group {group.group_id} archives a record of {topic.name} "
                        f"unprocessed after {attempts} deliveries ({limit.name}); the "
                        f"profile demands at least {wanted}{allowed}.",
                        expected=f"delivery count limit >= {wanted}",
                        actual=f"{limit.name} {attempts}",
                        source=limit.source.value, topic=topic.name)


@rule("KA615", "share.idle-with-lag", Severity.warning,
      "A share group with no members leaves records undelivered.",
      scope="topic",
      what="Reports share groups that have no member while records wait on a partition "
           "(lag), and that have not moved past a record written longer ago than the "
           "profile's share_idle_lag_minutes (the record at the start offset: Kafka moves "
           "the start offset lazily, so it may be one already delivered).",
      why="Nothing delivers a share group's records while it has no member; a queue that "
          "silently stopped is found when retention deletes its records (KA611).",
      example="jobs has no members; 420 records wait on orders-0, the oldest written 3 h "
              "ago.",
      fix="Start the group's consumers, or delete the group if nothing is meant to read "
          "it any more.")
def idle_with_lag(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """no members, lag > 0 and the oldest undelivered record older than the threshold."""
    limit_ms = ctx.thresholds.share_idle_lag_minutes * 60_000
    if limit_ms <= 0:
        return
    now = ctx.snapshot.taken_at_ms
    for group in _readers(topic, ctx.snapshot):
        if group.members:
            continue
        for state in _states(group, topic.name):
            since = state.undelivered_since_ms
            ends = ctx.snapshot.partition_offsets(topic.name, state.partition)
            if since is None or now - since < limit_ms or ends is None \
                    or state.start_offset is None:
                continue
            # Without the broker's lag (Kafka 4.1), what lies after the start offset: the
            # records there may be done with already, so it is the most that waits.
            lag = state.lag if state.lag is not None else \
                max(0, ends.high_watermark - state.start_offset)
            if lag <= 0:
                continue
            yield Violation(share_subject(group, topic.name, state.partition),
                            f"Share group {group.group_id} has no members; {_records(lag)} "
                            f"wait on {topic.name}-{state.partition}, and it has not moved "
                            f"past offset {state.start_offset}, written "
                            f"{duration(now - since)} ago.",
                            expected=f"start offset's record younger than "
                                     f"{duration(limit_ms)}, or members",
                            actual=f"no members, lag {lag}, start offset's record "
                                   f"{duration(now - since)} old",
                            source="share group offsets", topic=topic.name)
