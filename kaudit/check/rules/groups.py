"""KA6xx: consumer groups and the records they have not read yet.

Data can be lost after it was safely written: when retention deletes records a group has
not read, or when a transaction that never ends holds every read_committed reader back.
These rules read the groups and offsets the snapshot carries (``kaudit check --groups``,
the default against a live cluster) and skip snapshots without them. Times are measured
from the moment the snapshot was taken, so an offline audit of a snapshot file gives the
same answer as the live one did.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import as_int, broker_value, topic_value
from kaudit.check.rules.registry import TopicContext, Violation, rule
from kaudit.cluster.model import ClusterSnapshot, ConsumerGroup, GroupOffset, Topic

#: Kafka's defaults, for snapshots whose configs do not say.
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 15 * 60 * 1000


def _group_offsets(topic: Topic, snapshot: ClusterSnapshot
                   ) -> Iterator[tuple[ConsumerGroup, GroupOffset]]:
    for group in snapshot.groups or ():
        for offset in group.offsets:
            if offset.topic == topic.name:
                yield group, offset


def group_subject(group: ConsumerGroup, offset: GroupOffset) -> Subject:
    """A group on one partition: ``billing@orders-3``."""
    return Subject(SubjectKind.group, f"{group.group_id}@{offset.topic}-{offset.partition}")


def duration(ms: int) -> str:
    """``3 h 20 min``, ``45 min``, ``2 d 4 h``: how long, in the units an operator reads."""
    minutes = max(0, ms) // 60_000
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{mins} min" if mins else f"{max(0, ms) // 1000} s"


@rule("KA601", "group.unread-records-deleted", Severity.error,
      "A consumer group's committed offset is below the log start: records were deleted "
      "unread.",
      scope="topic",
      what="Reports consumer groups whose committed offset on a partition is below the "
           "partition's log start offset, with the number of records deleted in between.",
      why="Those records were written and acknowledged, and the group never processed them: "
          "retention (or delete-records) removed them first. When the group resumes, "
          "auto.offset.reset decides silently whether it skips to the oldest record left "
          "(earliest) or to the end (latest, losing even more).",
      example="billing committed offset 120 on orders-3; retention moved the log start to "
              "500: 380 records lost for billing.",
      fix="Find why the group stopped or fell behind (crashed consumers, a poison message, "
          "too few consumers); raise retention.ms on topics whose readers can stall; "
          "replay the lost range from the producer's source if it still has it.")
def unread_records_deleted(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """committed < log_start."""
    for group, offset in _group_offsets(topic, ctx.snapshot):
        ends = ctx.snapshot.partition_offsets(offset.topic, offset.partition)
        if ends is None or offset.committed is None or offset.committed >= ends.log_start:
            continue
        lost = ends.log_start - offset.committed
        yield Violation(group_subject(group, offset),
                        f"Group {group.group_id} committed offset {offset.committed} on "
                        f"{topic.name}-{offset.partition}, below the log start "
                        f"{ends.log_start}: {lost} record{'s' if lost != 1 else ''} were "
                        "deleted before the group read them.",
                        expected=f"committed >= log start {ends.log_start}",
                        actual=f"committed {offset.committed} ({lost} records deleted unread)",
                        source="consumer group offsets", topic=topic.name)


@rule("KA602", "group.retention-overtakes", Severity.warning,
      "Retention will delete records a consumer group has not read yet.",
      scope="topic",
      what="Reports consumer groups whose oldest unread record (the record at the committed "
           "offset) retention.ms deletes within the profile's group_loss_horizon_hours, "
           "unless the group reads past it first.",
      why="A group that lags by more than the topic's retention loses the oldest records it "
          "has not read, without an error anywhere: the next KA601.",
      example="billing's oldest unread record on orders-3 was written 6 d 20 h ago and "
              "retention.ms is 7 d: it is deleted in about 4 h.",
      fix="Scale the group out or fix what slows it; raise retention.ms for the topic until "
          "the group has caught up.")
def retention_overtakes(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """unread_since + retention.ms - now < horizon."""
    horizon_ms = ctx.thresholds.group_loss_horizon_hours * 3600 * 1000
    cleanup = topic_value(topic, ctx.snapshot, "cleanup.policy")
    retention = topic_value(topic, ctx.snapshot, "retention.ms")
    retention_ms = as_int(retention, DEFAULT_RETENTION_MS)
    if horizon_ms <= 0 or retention_ms < 0 or "delete" not in str(cleanup.value or "delete"):
        return
    now = ctx.snapshot.taken_at_ms
    for group, offset in _group_offsets(topic, ctx.snapshot):
        ends = ctx.snapshot.partition_offsets(offset.topic, offset.partition)
        if ends is None or offset.committed is None or offset.unread_since_ms is None:
            continue
        if offset.committed < ends.log_start:
            continue  # already lost: KA601
        left_ms = offset.unread_since_ms + retention_ms - now
        if left_ms >= horizon_ms:
            continue
        lag = ends.high_watermark - offset.committed
        when = (f"in about {duration(left_ms)}" if left_ms > 0
                else "at any moment (it is older than retention.ms)")
        yield Violation(group_subject(group, offset),
                        f"Group {group.group_id} lags {lag} record{'s' if lag != 1 else ''} "
                        f"on {topic.name}-{offset.partition}; its oldest unread record "
                        f"(offset {offset.committed}) was written "
                        f"{duration(now - offset.unread_since_ms)} ago and retention deletes "
                        f"it {when}, unless the group reads past it.",
                        expected=f"oldest unread record kept for >= "
                                 f"{ctx.thresholds.group_loss_horizon_hours} h",
                        actual=f"deleted {when}",
                        source=retention.source.value, topic=topic.name)


@rule("KA603", "partition.hanging-transaction", Severity.error,
      "A transaction left open holds every read_committed reader of a partition back.",
      scope="topic",
      what="Reports partitions whose last stable offset has been behind the high watermark "
           "longer than max_open_transaction_seconds (by default the brokers' "
           "transaction.max.timeout.ms), measured from the first record of the oldest open "
           "transaction.",
      why="read_committed consumers read only up to the last stable offset: until the "
          "transaction is committed or aborted, nothing after it reaches them, committed "
          "records of other producers included. A hanging transaction (KIP-890's target) "
          "stalls them indefinitely.",
      example="orders-3: last stable offset 1200, high watermark 1540, the transaction at "
              "1200 open for 40 min with transaction.max.timeout.ms 15 min.",
      fix="Find the producer with kafka-transactions.sh find-hanging and abort the "
          "transaction (kafka-transactions.sh abort); on Kafka 4.x enable "
          "transaction.version=2, which closes the known causes.")
def hanging_transaction(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """last_stable < high_watermark for longer than the limit."""
    limit_s = ctx.thresholds.max_open_transaction_seconds
    configured = broker_value(ctx.snapshot, "transaction.max.timeout.ms")
    limit_ms = limit_s * 1000 if limit_s > 0 else as_int(configured,
                                                         DEFAULT_TRANSACTION_MAX_TIMEOUT_MS)
    now = ctx.snapshot.taken_at_ms
    for part in topic.partitions:
        ends = ctx.snapshot.partition_offsets(topic.name, part.partition)
        if ends is None or ends.last_stable >= ends.high_watermark or ends.open_since_ms is None:
            continue
        open_ms = now - ends.open_since_ms
        if open_ms <= limit_ms:
            continue
        behind = ends.high_watermark - ends.last_stable
        yield Violation(Subject(SubjectKind.partition, f"{topic.name}-{part.partition}"),
                        f"Partition {topic.name}-{part.partition} has had a transaction open "
                        f"for {duration(open_ms)} at offset {ends.last_stable}: "
                        f"read_committed consumers cannot read the {behind} record"
                        f"{'s' if behind != 1 else ''} after it.",
                        expected=f"transactions open <= {duration(limit_ms)}",
                        actual=f"open {duration(open_ms)}, last stable offset "
                               f"{ends.last_stable} < high watermark {ends.high_watermark}",
                        source=("policy max_open_transaction_seconds" if limit_s > 0
                                else configured.source.value), topic=topic.name)


@rule("KA604", "group.no-committed-offset", Severity.info,
      "A consumer group reads a partition without a committed offset.",
      scope="topic",
      what="Reports partitions assigned to a group's members on which the group has no "
           "committed offset.",
      why="Where the group starts after a restart or rebalance is then auto.offset.reset's "
          "choice: latest skips every record written before, earliest re-reads the whole "
          "log. Either may be right; it should be a decision.",
      example="billing's members read orders-3 but never committed an offset on it.",
      fix="Commit offsets (after processing) or set auto.offset.reset explicitly in the "
          "consumer configuration.")
def no_committed_offset(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """committed is None on an assigned partition."""
    for group, offset in _group_offsets(topic, ctx.snapshot):
        if offset.committed is None:
            yield Violation(group_subject(group, offset),
                            f"Group {group.group_id} reads {topic.name}-{offset.partition} "
                            "without a committed offset: auto.offset.reset decides where it "
                            "starts after a restart.",
                            expected="a committed offset", actual="none",
                            source="consumer group offsets", topic=topic.name)
