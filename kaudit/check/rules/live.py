"""KA2xx: the live state of partitions (leaders, ISR), when the snapshot has it.

These rules skip topics whose partition state is unknown (manifests) and
snapshots that were not read from a running cluster. They are the only topic
rules that also run on Kafka's internal topics (``internal_topics=True``): an
offline ``__consumer_offsets`` partition stops consumer groups all the same.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity
from kaudit.check.rules.common import durability, partition_subject
from kaudit.check.rules.registry import TopicContext, Violation, rule
from kaudit.cluster.model import PartitionState, Topic


def _live_partitions(topic: Topic, ctx: TopicContext) -> tuple[PartitionState, ...]:
    return topic.partitions if ctx.snapshot.live else ()


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def _state(part: PartitionState) -> str:
    """ISR, and ELR where it was read, as kafka-topics --describe shows them."""
    if part.elr is None:
        return f"ISR {_ids(part.isr)}"
    last = f", last known ELR {_ids(part.last_known_elr)}" if part.last_known_elr else ""
    return f"ISR {_ids(part.isr)}, ELR {_ids(part.elr)}{last}"


def _brokers(ids: tuple[int, ...]) -> str:
    return f"{'broker' if len(ids) == 1 else 'brokers'} {_ids(ids)}"


def _if_the_leader_fails(part: PartitionState) -> str:
    """What a leader failure would do to an online partition under its min ISR, from its
    ELR; nothing when the ELR was not read."""
    if part.elr is None:
        return ""
    if part.elr:
        return (f" If leader {part.leader} fails, {_brokers(part.elr)} (eligible leader "
                "replicas) can still take over without losing acknowledged writes.")
    return (f" Its ELR is empty: the ISR {_ids(part.isr)} alone holds every acknowledged "
            "write, and no other replica may take over cleanly.")


@rule("KA201", "partition.under-replicated", Severity.warning,
      "A partition has replicas that are not in sync.",
      scope="topic", internal_topics=True,
      what="Reports partitions whose ISR is smaller than their replica set.",
      why="Every replica out of the ISR is a copy that would not survive a leader failure; "
          "the partition is closer to blocked writes (min.insync.replicas) and to data loss.",
      example="orders-0 with replicas [1,2,3] and ISR [1,2] while broker 3 is down or lagging.",
      fix="Bring the missing broker back or find why the follower lags "
          "(`replica.lag.time.max.ms`, disk, network); reassign if the broker is gone.")
def under_replicated(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """ISR smaller than the replica set."""
    for part in _live_partitions(topic, ctx):
        if part.leader is not None and len(set(part.isr)) < len(set(part.replicas)):
            missing = tuple(r for r in part.replicas if r not in part.isr)
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has {len(part.isr)} of "
                            f"{len(part.replicas)} replicas in sync; "
                            f"{'broker' if len(missing) == 1 else 'brokers'} {_ids(missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} behind.",
                            expected=f"ISR {_ids(part.replicas)}", actual=f"ISR {_ids(part.isr)}",
                            source="partition state", topic=topic.name)


@rule("KA202", "partition.under-min-isr", Severity.error,
      "A partition's ISR is below min.insync.replicas: acks=all writes fail now.",
      scope="topic", internal_topics=True,
      what="Reports online partitions whose ISR is smaller than the topic's effective "
           "min.insync.replicas.",
      why="Producers with acks=all (and every idempotent or transactional producer) get "
          "NotEnoughReplicas for this partition until a replica catches up.",
      example="RF=3, min.insync.replicas=2, two brokers down: ISR [1].",
      fix="Restore the failed brokers; do not lower min.insync.replicas to get writes "
          "through unless losing acked data is acceptable.")
def under_min_isr(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """ISR below min.insync.replicas (online partitions)."""
    d = durability(topic, ctx.snapshot)
    for part in _live_partitions(topic, ctx):
        if part.leader is not None and len(part.isr) < d.effective_min_isr:
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has only "
                            f"{len(part.isr)} in-sync replica{'s' if len(part.isr) != 1 else ''} "
                            f"with min.insync.replicas={d.effective_min_isr}, so acks=all "
                            f"writes to it fail now.{_if_the_leader_fails(part)}",
                            expected=f"ISR size >= {d.effective_min_isr}",
                            actual=_state(part),
                            source=d.min_isr_value.source.value, topic=topic.name)


@rule("KA203", "partition.at-min-isr", Severity.warning,
      "A degraded partition's ISR equals min.insync.replicas: one more failure blocks writes.",
      scope="topic", internal_topics=True,
      what="Reports partitions that have lost replicas from the ISR and are now exactly at "
           "min.insync.replicas. (A healthy partition whose whole replica set equals "
           "min.insync.replicas is reported once per topic by KA105 instead.)",
      why="One more broker failure makes every acks=all write to the partition fail.",
      example="RF=3, min.insync.replicas=2, ISR [1,2] while broker 3 is down.",
      fix="Restore the missing replica before any planned broker restart.")
def at_min_isr(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """ISR == min.isr while replicas are missing from it."""
    d = durability(topic, ctx.snapshot)
    for part in _live_partitions(topic, ctx):
        if (part.leader is not None and len(part.isr) == d.effective_min_isr
                and len(part.isr) < len(part.replicas)):
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} is down to "
                            f"min.insync.replicas={d.effective_min_isr} in-sync replicas, so one "
                            "more broker failure blocks acks=all writes.",
                            expected=f"ISR size > {d.effective_min_isr}",
                            actual=f"ISR {_ids(part.isr)}",
                            source=d.min_isr_value.source.value, topic=topic.name)


@rule("KA204", "partition.offline", Severity.error,
      "A partition has no leader: it can be neither written nor read.",
      scope="topic", internal_topics=True,
      what="Reports partitions without a leader (or whose leader is not a live broker).",
      why="Producers and consumers of the partition are stuck; with unclean election off it "
          "stays offline until an in-sync replica returns.",
      example="All replicas of orders-2 on brokers that are down.",
      fix="Restart the brokers holding the partition's replicas; check the controller log.")
def offline(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Leader None (or not a live broker)."""
    live = ctx.snapshot.broker_ids
    for part in _live_partitions(topic, ctx):
        if part.leader is None or part.leader < 0 or (live and part.leader not in live):
            waiting = (f" {_brokers(part.elr)} (eligible leader replicas) can lead it "
                       "without loss as soon as one of them is back."
                       if part.elr else "")
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has no leader, so it can "
                            f"be neither written nor read.{waiting}",
                            expected="a leader", actual="none" if part.leader in (None, -1)
                            else f"broker {part.leader} (not live)",
                            source="partition state", topic=topic.name)


@rule("KA205", "partition.replica-on-offline-broker", Severity.warning,
      "A partition has replicas on brokers that are not registered.",
      scope="topic", internal_topics=True,
      what="Reports partitions with replicas assigned to broker ids that are not among the "
           "live brokers.",
      why="Those copies do not exist right now: the partition has less redundancy than its "
          "replication factor says, until the broker returns or the partition is reassigned.",
      example="Broker 3 was stopped or decommissioned; orders-0 still lists [1,2,3].",
      fix="Restart the broker, or reassign the partition away from a decommissioned broker.")
def replica_on_offline_broker(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Replica ids that are not live brokers."""
    live = ctx.snapshot.broker_ids
    if not live:
        return
    for part in _live_partitions(topic, ctx):
        gone = tuple(r for r in part.replicas if r not in live)
        if gone:
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has replicas on "
                            f"{'broker' if len(gone) == 1 else 'brokers'} {_ids(gone)}, which "
                            f"{'is' if len(gone) == 1 else 'are'} not live.",
                            expected=f"replicas on live brokers {_ids(tuple(sorted(live)))}",
                            actual=f"replicas {_ids(part.replicas)}",
                            source="partition state", topic=topic.name)


@rule("KA206", "partition.no-eligible-leader", Severity.error,
      "An offline partition has no in-sync and no eligible replica: only an unclean "
      "election brings it back, losing acknowledged writes.",
      scope="topic", internal_topics=True,
      what="Reports partitions without a leader whose ISR and eligible leader replicas "
           "(ELR, KIP-966, as DescribeTopicPartitions reports them) hold no live broker. Needs "
           "the ELR: it skips snapshots that could not read it.",
      why="With ELR, Kafka keeps electable every replica known to hold all acknowledged "
          "writes. When none is left, the partition stays offline until one returns; the "
          "only other way back is an unclean election, which truncates acknowledged writes "
          "the new leader never had. The last known ELR names the replicas that were "
          "eligible most recently: the ones to bring back first, or to prefer if an unclean "
          "election cannot be avoided.",
      example="orders-0, replicas [1,2,3], ISR [], ELR [], last known ELR [3]: broker 3 "
              "left the ELR when it was fenced.",
      fix="Bring back the brokers of the last known ELR (then the ISR) first. Only if they "
          "cannot return, and losing acknowledged writes is accepted, run "
          "`kafka-leader-election.sh --election-type unclean --topic T --partition P`.")
def no_eligible_leader(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Offline, with ISR and ELR holding no live broker (ELR read)."""
    live = ctx.snapshot.broker_ids
    for part in _live_partitions(topic, ctx):
        if part.elr is None or part.leader is not None:
            continue
        if any(r in live for r in (*part.isr, *part.elr)):
            continue
        last = (f"its last known ELR was {_brokers(part.last_known_elr)}: bring "
                f"{'it' if len(part.last_known_elr) == 1 else 'them'} back first."
                if part.last_known_elr else "and there is no last known ELR to prefer.")
        yield Violation(partition_subject(topic, part),
                        f"Partition {topic.name}-{part.partition} is offline and no live "
                        "replica is in its ISR or ELR: only an unclean election brings it "
                        f"back, and it loses acknowledged writes; {last}",
                        expected="an in-sync or eligible replica",
                        actual=_state(part), source="partition state", topic=topic.name)
