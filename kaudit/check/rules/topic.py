"""KA1xx: a topic's durability settings against its profile."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from kaudit.check.findings import Severity
from kaudit.check.rules.common import (
    assumed_offline,
    durability,
    partition_subject,
    provenance,
    show,
    topic_subject,
)
from kaudit.check.rules.registry import TopicContext, Violation, rule
from kaudit.cluster.model import ConfigValue, Topic


@rule("KA101", "topic.replication-factor-floor", Severity.error,
      "The topic has fewer replicas than its profile requires.", scope="topic",
      what="Compares each topic's replication factor with the profile's "
           "`min_replication_factor` (3 for `durable`).",
      why="Every copy fewer is one broker failure closer to losing data: with RF=2 one broker "
          "down leaves a single copy, and RF=1 loses data with any disk or broker loss.",
      example="`kafka-topics --create --topic orders --replication-factor 2` under `durable`.",
      fix="Raise the replication factor with `kafka-reassign-partitions` (add replicas to every "
          "partition), or create the topic again with `--replication-factor 3`.")
def replication_factor_floor(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """RF below ``min_replication_factor``."""
    floor = ctx.thresholds.min_replication_factor
    if topic.replication_factor < floor:
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} keeps {topic.replication_factor} "
                        f"cop{'y' if topic.replication_factor == 1 else 'ies'} of each record "
                        f"but profile {ctx.profile.name} requires at least {floor}.",
                        expected=f">= {floor}", actual=str(topic.replication_factor),
                        source="replication factor", topic=topic.name,
                        declared_at=topic.setting_at("replication_factor"))


@rule("KA102", "topic.replication-factor-exceeds-brokers", Severity.error,
      "The topic wants more replicas than there are live brokers.", scope="topic",
      what="Compares the replication factor with the number of registered (live) brokers.",
      why="Replicas beyond the live brokers can never be in sync: partitions stay "
          "under-replicated and acks=all writes may block on min.insync.replicas.",
      example="A topic with RF=3 on a cluster where only 2 brokers are registered.",
      fix="Bring the missing brokers back, or reassign the partitions to the brokers that "
          "exist.")
def replication_factor_exceeds_brokers(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """RF above the number of live brokers (only known for live snapshots)."""
    brokers = len(ctx.snapshot.brokers)
    if ctx.snapshot.live and brokers and topic.replication_factor > brokers:
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} has replication factor {topic.replication_factor} "
                        f"but only {brokers} broker{'s are' if brokers != 1 else ' is'} live, "
                        "so some replicas can never be in sync.",
                        expected=f"<= {brokers}", actual=str(topic.replication_factor),
                        source="replication factor", topic=topic.name)


@rule("KA103", "topic.uneven-replica-counts", Severity.warning,
      "Partitions of the topic have different numbers of replicas.", scope="topic",
      what="Counts the replicas of every partition and reports partitions that have fewer "
           "than the topic's largest count.",
      why="The topic's replication factor is reported as the largest count; partitions with "
          "fewer replicas are less durable than the topic appears, usually after an "
          "interrupted reassignment.",
      example="orders-0 on brokers [1,2,3] but orders-1 on [1,2].",
      fix="Reassign the short partitions so every partition has the same replica count.")
def uneven_replica_counts(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Partitions with fewer replicas than the topic's largest count."""
    if not topic.partitions:
        return
    counts = Counter(len(p.replicas) for p in topic.partitions)
    if len(counts) < 2:
        return
    most = max(counts)
    for part in topic.partitions:
        if len(part.replicas) < most:
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has "
                            f"{len(part.replicas)} replicas while other partitions of the topic "
                            f"have {most}.",
                            expected=str(most), actual=str(len(part.replicas)),
                            source="replica assignment", topic=topic.name)


@rule("KA104", "topic.min-isr-floor", Severity.error,
      "min.insync.replicas is below what the topic's profile requires.", scope="topic",
      what="Compares the topic's effective `min.insync.replicas` (its own, or the broker "
           "default it inherits) with the profile's `min_insync_replicas` (2 for `durable`).",
      why="With min.insync.replicas=1 the ISR may shrink to the leader alone and acks=all "
          "then means acks=1: the leader acknowledges alone and the write is lost if it dies "
          "before a follower copies it.",
      example="A topic created without `min.insync.replicas`, inheriting the broker default 1.",
      fix="`kafka-configs --alter --entity-type topics --entity-name T --add-config "
          "min.insync.replicas=2` (and keep it at most RF-1).")
def min_isr_floor(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """min.insync.replicas below the profile's floor."""
    d = durability(topic, ctx.snapshot)
    floor = ctx.thresholds.min_insync_replicas
    if d.min_isr < floor:
        who, fails = (("the leader alone", "it fails") if d.min_isr == 1
                      else (f"{d.min_isr} replicas", "they fail"))
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} has min.insync.replicas={d.min_isr} "
                        f"({provenance(d.min_isr_value, ctx.snapshot)}), so an acks=all "
                        f"write can be acknowledged by {who} and lost when {fails}.",
                        expected=f">= {floor}", actual=str(d.min_isr),
                        source=d.min_isr_value.source.value, topic=topic.name,
                        declared_at=topic.setting_at("min.insync.replicas"))


@rule("KA105", "topic.min-isr-blocks-writes", Severity.error,
      "Too few broker failures stop acks=all writes (min.insync.replicas too close to RF).",
      scope="topic",
      what="Checks that RF - min.insync.replicas reaches the profile's `min_write_tolerance` "
           "(1 for `durable`: min.insync.replicas <= RF-1).",
      why="With min.insync.replicas equal to RF, a single broker down (a crash, or any rolling "
          "restart) makes every acks=all write fail with NotEnoughReplicas.",
      example="RF=3 with min.insync.replicas=3, or RF=2 with min.insync.replicas=2.",
      fix="Lower min.insync.replicas to RF-1, or raise the replication factor.")
def min_isr_blocks_writes(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """RF - min.isr below ``min_write_tolerance`` (min.isr > RF is KA106's)."""
    d = durability(topic, ctx.snapshot)
    wanted = ctx.thresholds.min_write_tolerance
    if d.min_isr <= d.replication_factor and d.write_tolerance < wanted:
        most = d.replication_factor - wanted
        blocks = (
            "any broker down blocks" if d.write_tolerance == 0
            else f"{d.write_tolerance + 1} brokers down block"
        )
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} has min.insync.replicas={d.min_isr} with "
                        f"replication factor {d.replication_factor}, so {blocks} all acks=all "
                        "writes.",
                        expected=f"<= {most} (RF - {wanted})", actual=str(d.min_isr),
                        source=d.min_isr_value.source.value, topic=topic.name,
                        declared_at=topic.setting_at("min.insync.replicas"))


@rule("KA106", "topic.min-isr-exceeds-rf", Severity.error,
      "min.insync.replicas is larger than the replication factor: Kafka enforces a smaller "
      "value than the one configured.",
      scope="topic",
      what="Checks that min.insync.replicas is not larger than the replication factor, "
           "whatever the profile, and says what the brokers really enforce.",
      why="Since Kafka 3.7 the brokers use min(min.insync.replicas, RF) (KAFKA-15583): the "
          "configured value is not what protects the topic, acks=all writes need every "
          "replica in sync, and any broker down blocks them. Before 3.7 the ISR can never "
          "reach the configured value, so every acks=all (and idempotent) write fails with "
          "NotEnoughReplicas. Kafka's own tools compare the ISR with the raw value "
          "(KAFKA-21377).",
      example="RF=2 topic inheriting a broker default min.insync.replicas=3.",
      fix="Set min.insync.replicas on the topic to at most RF-1, or raise the replication "
          "factor.")
def min_isr_exceeds_rf(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """min.isr > RF."""
    d = durability(topic, ctx.snapshot)
    if d.min_isr <= d.replication_factor:
        return
    replicas = f"{d.replication_factor} replica{'s' if d.replication_factor != 1 else ''}"
    effect = (f"so the brokers enforce min.insync.replicas={d.effective_min_isr} "
              "(min(min.insync.replicas, RF), Kafka 3.7+): acks=all writes need every "
              "replica in sync and stop when any broker is down")
    if not d.capped_known:
        effect += "; brokers older than 3.7 would refuse every acks=all write"
    yield Violation(topic_subject(topic),
                    f"Topic {topic.name} has min.insync.replicas={d.min_isr} "
                    f"({provenance(d.min_isr_value, ctx.snapshot)}) but only {replicas}, "
                    f"{effect}.",
                    expected=f"<= {d.replication_factor}", actual=str(d.min_isr),
                    source=d.min_isr_value.source.value, topic=topic.name,
                    declared_at=topic.setting_at("min.insync.replicas"))


_PINNED = ("min.insync.replicas", "unclean.leader.election.enable")


@rule("KA107", "topic.inherited-default", Severity.info,
      "A durability setting of the topic is inherited from a broker or Kafka default.",
      scope="topic",
      what="Reports `min.insync.replicas` and `unclean.leader.election.enable` values that the "
           "topic does not set itself (source other than DYNAMIC_TOPIC_CONFIG).",
      why="An inherited value changes silently when someone edits server.properties or a "
          "cluster-wide dynamic default, or when the topic moves to another cluster.",
      example="`min.insync.replicas=2` coming from STATIC_BROKER_CONFIG.",
      fix="Pin the value on the topic: `kafka-configs --alter --entity-type topics "
          "--entity-name T --add-config min.insync.replicas=2`.")
def inherited_default(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Durability configs not set on the topic itself."""
    for name in _PINNED:
        value = durability_value(topic, ctx, name)
        if not value.source.is_default:
            continue
        if assumed_offline(value, ctx.snapshot):
            # Offline the cluster's default is unknown: say what is assumed, not inherited.
            message = (f"Topic {topic.name} does not set {name} in its manifest: the "
                       f"cluster's default applies (kaudit assumes {value.value}, Kafka's "
                       "built-in default).")
            expected = "set in the manifest (spec.config)"
        else:
            message = (f"Topic {topic.name} does not set {name} itself: {show(value)} is "
                       f"{provenance(value)}.")
            expected = "set on the topic (DYNAMIC_TOPIC_CONFIG)"
        yield Violation(topic_subject(topic), message, expected=expected,
                        actual=str(value.value), source=value.source.value,
                        topic=topic.name, declared_at=topic.setting_at(name))


def durability_value(topic: Topic, ctx: TopicContext, name: str) -> ConfigValue:
    """The effective value of one of the pinned durability configs."""
    d = durability(topic, ctx.snapshot)
    return d.min_isr_value if name == "min.insync.replicas" else d.unclean_value


@rule("KA108", "topic.unclean-leader-election", Severity.error,
      "Unclean leader election is on for the topic.", scope="topic",
      what="Reports topics whose effective `unclean.leader.election.enable` is true when the "
           "profile does not allow it.",
      why="An out-of-sync replica may become leader; the log is truncated to what it has and "
          "acknowledged messages vanish, whatever acks and min.insync.replicas say.",
      example="`unclean.leader.election.enable=true` on the topic or inherited from the "
              "brokers.",
      fix="Set `unclean.leader.election.enable=false` on the topic (and on the brokers); accept "
          "that a partition stays offline until an in-sync replica returns.")
def unclean_leader_election(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """unclean.leader.election.enable=true where the profile forbids it."""
    d = durability(topic, ctx.snapshot)
    if d.unclean and not ctx.thresholds.allow_unclean_leader_election:
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} allows unclean leader election "
                        f"({provenance(d.unclean_value, ctx.snapshot)}), so an out-of-sync "
                        "replica can become leader and acknowledged messages vanish.",
                        expected="false", actual="true", source=d.unclean_value.source.value,
                        topic=topic.name,
                        declared_at=topic.setting_at("unclean.leader.election.enable"))


@rule("KA109", "topic.loss-accepted", Severity.info,
      "The topic is audited under a profile that accepts losing acknowledged writes.",
      scope="topic",
      what="Notes every topic whose profile (e.g. `best-effort`) accepts data loss, so the "
           "report says it plainly.",
      why="best-effort topics (logs, metrics) may use acks=0/1, RF=1 or unclean election; "
          "nobody should mistake them for durable ones.",
      example="`topics: [{match: 'metrics.*', profile: best-effort}]`.",
      fix="Nothing, if losing these records is acceptable; otherwise map the topic to "
          "`durable`.")
def loss_accepted(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Topics under a loss-accepting profile."""
    if ctx.thresholds.loss_accepted:
        yield Violation(topic_subject(topic),
                        f"Topic {topic.name} is audited as {ctx.profile.name}: losing "
                        "acknowledged records is accepted.",
                        expected="no acknowledged write lost", actual="loss accepted",
                        source=f"profile {ctx.profile.name}", topic=topic.name)


@rule("KA110", "topic.replicas-in-one-rack", Severity.warning,
      "All replicas of a partition are in one rack although the cluster spans several.",
      scope="topic",
      what="Where brokers have `broker.rack` set and more than one rack exists, reports "
           "partitions whose replicas all sit in the same rack.",
      why="A rack (or availability zone) outage then takes every copy of the partition at "
          "once: it goes offline and, with unclean election, loses data.",
      example="Racks a, b, c; partition orders-0 on brokers 1 and 2, both in rack a.",
      fix="Reassign the partition across racks; create topics while `broker.rack` is set so "
          "Kafka spreads replicas itself.")
def replicas_in_one_rack(topic: Topic, ctx: TopicContext) -> Iterator[Violation]:
    """Partitions whose replicas share one rack while several racks exist."""
    racks = {b.id: b.rack for b in ctx.snapshot.brokers if b.rack}
    if len(set(racks.values())) < 2:
        return
    for part in topic.partitions:
        placed = {racks.get(r) for r in part.replicas}
        if len(part.replicas) > 1 and len(placed) == 1 and None not in placed:
            rack = next(iter(placed))
            yield Violation(partition_subject(topic, part),
                            f"Partition {topic.name}-{part.partition} has all "
                            f"{len(part.replicas)} replicas in rack {rack}, so losing that "
                            "rack loses every copy.",
                            expected=f"replicas in >= 2 of {len(set(racks.values()))} racks",
                            actual=f"rack {rack} only", source="replica assignment",
                            topic=topic.name)
