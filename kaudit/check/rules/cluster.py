"""KA3xx: broker defaults, cluster-wide settings and Kafka's internal topics.

Broker configs are unknown when checking manifests; these rules then skip.
Thresholds are the default profile's.
"""

from __future__ import annotations

from collections.abc import Iterator

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import (
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_TOPIC,
    as_bool,
    as_int,
    broker_values,
    durability,
    provenance,
    where_on,
)
from kaudit.check.rules.registry import ClusterContext, Violation, rule
from kaudit.cluster.model import ClusterSnapshot, ConfigSource, ConfigValue, Topic


def _brokers_known(snapshot: ClusterSnapshot) -> bool:
    return bool(snapshot.broker_configs)


def _topic(snapshot: ClusterSnapshot, name: str) -> Topic | None:
    return next((t for t in snapshot.topics if t.name == name), None)


def _brokers_fail(count: int) -> str:
    return "its only broker fails" if count <= 1 else f"{count} brokers fail"


def _internal_rf(ctx: ClusterContext, config: str, topic_name: str,
                 what: str) -> Iterator[Violation]:
    floor = ctx.thresholds.min_replication_factor
    if _brokers_known(ctx.snapshot):
        for subject, value in broker_values(ctx.snapshot, config):
            rf = as_int(value, 0)
            if rf < floor:
                yield Violation(subject,
                                f"{config}={rf} on {where_on(subject)} "
                                f"({provenance(value)}) creates {topic_name} with fewer than "
                                f"{floor} copies of {what}.",
                                expected=f">= {floor}", actual=str(rf),
                                source=value.source.value)
    topic = _topic(ctx.snapshot, topic_name)
    if topic is not None and topic.replication_factor < floor:
        yield Violation(Subject(SubjectKind.topic, topic_name),
                        f"{topic_name} has replication factor {topic.replication_factor}, so "
                        f"{what} {'is' if what.endswith('state') else 'are'} lost when "
                        f"{_brokers_fail(topic.replication_factor)}.",
                        expected=f">= {floor}", actual=str(topic.replication_factor),
                        source="replication factor", topic=topic_name,
                        declared_at=topic.setting_at("replication_factor"))


@rule("KA301", "internal.offsets-replication-factor", Severity.error,
      "Committed consumer offsets are kept with too few replicas.", scope="cluster",
      what="Checks the broker setting `offsets.topic.replication.factor` and, when it exists, "
           "the actual replication factor of `__consumer_offsets` against the default "
           "profile's `min_replication_factor`.",
      why="When the offsets topic loses its data, consumer groups restart from "
          "`auto.offset.reset`: they skip records (latest) or reprocess everything (earliest). "
          "The setting only applies when the topic is first created, so the real topic "
          "matters more.",
      example="A cluster started with one broker and `offsets.topic.replication.factor=1`, "
              "later grown to three.",
      fix="Reassign `__consumer_offsets` to 3 replicas and set "
          "`offsets.topic.replication.factor=3` in server.properties.")
def offsets_replication_factor(ctx: ClusterContext) -> Iterator[Violation]:
    """offsets.topic.replication.factor and __consumer_offsets RF."""
    yield from _internal_rf(ctx, "offsets.topic.replication.factor", OFFSETS_TOPIC,
                            "committed consumer offsets")


@rule("KA302", "internal.transaction-log-replication-factor", Severity.error,
      "Transaction state is kept with too few replicas.", scope="cluster",
      what="Checks `transaction.state.log.replication.factor` and the actual replication "
           "factor of `__transaction_state` against the default profile's "
           "`min_replication_factor`.",
      why="Transactional producers (exactly-once) depend on the transaction log; losing it "
          "leaves transactions hanging and can expose or drop records.",
      example="`transaction.state.log.replication.factor=1` copied from a dev setup.",
      fix="Set `transaction.state.log.replication.factor=3` before the first transactional "
          "producer starts, or reassign `__transaction_state` to 3 replicas.")
def transaction_log_replication_factor(ctx: ClusterContext) -> Iterator[Violation]:
    """transaction.state.log.replication.factor and __transaction_state RF."""
    yield from _internal_rf(ctx, "transaction.state.log.replication.factor",
                            TRANSACTION_TOPIC, "transaction state")


@rule("KA303", "internal.transaction-log-min-isr", Severity.error,
      "The transaction log's min ISR is too low, or higher than its replication factor.",
      scope="cluster",
      what="Checks `transaction.state.log.min.isr` (and the min.insync.replicas of an existing "
           "`__transaction_state`) against the default profile's `min_insync_replicas`, and "
           "that it is not larger than the transaction log's replication factor.",
      why="Too low and a committed transaction's state can be lost with one broker; larger "
          "than the replication factor and no transaction can ever complete.",
      example="`transaction.state.log.min.isr=1`, or min.isr 2 with replication factor 1.",
      fix="Set `transaction.state.log.min.isr=2` with `transaction.state.log.replication."
          "factor=3`.")
def transaction_log_min_isr(ctx: ClusterContext) -> Iterator[Violation]:
    """transaction.state.log.min.isr floor and ceiling."""
    yield from _internal_min_isr(ctx, "transaction.state.log.min.isr",
                                 "transaction.state.log.replication.factor", TRANSACTION_TOPIC,
                                 "transaction state", "no transaction can complete")


def _internal_min_isr(ctx: ClusterContext, config: str, rf_config: str, topic_name: str,
                      what: str, stuck: str) -> Iterator[Violation]:
    """An internal topic's min ISR setting (and its real topic's) against the floor, and
    the setting against its replication factor setting (above it: ``stuck``)."""
    floor = ctx.thresholds.min_insync_replicas
    if _brokers_known(ctx.snapshot):
        rf_by_subject = dict(broker_values(ctx.snapshot, rf_config))
        for subject, value in broker_values(ctx.snapshot, config):
            min_isr = as_int(value, 1)
            rf_value = rf_by_subject.get(subject)
            rf = as_int(rf_value, 3) if rf_value is not None else None
            if rf is not None and min_isr > rf:
                yield Violation(subject,
                                f"{config}={min_isr} on {where_on(subject)} is larger than "
                                f"{rf_config}={rf}, so {stuck}.",
                                expected=f"<= {rf}", actual=str(min_isr),
                                source=value.source.value)
            elif min_isr < floor:
                yield Violation(subject,
                                f"{config}={min_isr} on {where_on(subject)} "
                                f"({provenance(value)}) lets {what} be acknowledged "
                                f"by fewer than {floor} replicas.",
                                expected=f">= {floor}", actual=str(min_isr),
                                source=value.source.value)
    topic = _topic(ctx.snapshot, topic_name)
    if topic is not None:
        d = durability(topic, ctx.snapshot)
        if d.min_isr < floor:
            yield Violation(Subject(SubjectKind.topic, topic_name),
                            f"{topic_name} has min.insync.replicas={d.min_isr} "
                            f"({provenance(d.min_isr_value, ctx.snapshot)}), below {floor}.",
                            expected=f">= {floor}", actual=str(d.min_isr),
                            source=d.min_isr_value.source.value, topic=topic_name,
                            declared_at=topic.setting_at("min.insync.replicas"))


def _share_groups_off(snapshot: ClusterSnapshot) -> bool:
    """The cluster says share groups are off (``share.version`` 0): no share coordinator
    writes its state. Unknown (features not read) counts as on."""
    return snapshot.feature_level("share.version") == 0


@rule("KA310", "internal.share-state-replication-factor", Severity.error,
      "Share groups' state is kept with too few replicas.", scope="cluster",
      what="Where share groups are on (`share.version` >= 1, or the features were not read), "
           "checks `share.coordinator.state.topic.replication.factor` and the actual "
           "replication factor of `__share_group_state` against the default profile's "
           "`min_replication_factor`.",
      why="The share coordinator keeps each share-partition's start offset and every "
          "in-flight record's delivery state there; when it is lost, records already "
          "acknowledged are delivered again and the delivery counts that archive poison "
          "records start over.",
      example="`share.coordinator.state.topic.replication.factor=1` copied from a one-broker "
              "dev setup.",
      fix="Set `share.coordinator.state.topic.replication.factor=3` before the first share "
          "group starts, or reassign `__share_group_state` to 3 replicas.")
def share_state_replication_factor(ctx: ClusterContext) -> Iterator[Violation]:
    """share.coordinator.state.topic.replication.factor and __share_group_state RF."""
    if _share_groups_off(ctx.snapshot):
        return
    yield from _internal_rf(ctx, "share.coordinator.state.topic.replication.factor",
                            SHARE_STATE_TOPIC, "share-group state")


@rule("KA311", "internal.share-state-min-isr", Severity.error,
      "The share groups' state topic's min ISR is too low, or higher than its replication "
      "factor.", scope="cluster",
      what="Where share groups are on, checks `share.coordinator.state.topic.min.isr` (and "
           "the min.insync.replicas of an existing `__share_group_state`) against the default "
           "profile's `min_insync_replicas`, and that it is not larger than the state topic's "
           "replication factor.",
      why="Too low and an acknowledgement's state can be lost with one broker; larger than "
          "the replication factor and the share coordinator can write no state at all.",
      example="`share.coordinator.state.topic.min.isr=1`.",
      fix="Set `share.coordinator.state.topic.min.isr=2` with "
          "`share.coordinator.state.topic.replication.factor=3`.")
def share_state_min_isr(ctx: ClusterContext) -> Iterator[Violation]:
    """share.coordinator.state.topic.min.isr floor and ceiling."""
    if _share_groups_off(ctx.snapshot):
        return
    yield from _internal_min_isr(ctx, "share.coordinator.state.topic.min.isr",
                                 "share.coordinator.state.topic.replication.factor",
                                 SHARE_STATE_TOPIC, "share-group state",
                                 "the share coordinator can write no state")


@rule("KA304", "broker.default-replication-factor", Severity.warning,
      "Topics created without an explicit replication factor get too few replicas.",
      scope="cluster",
      what="Compares the brokers' `default.replication.factor` with the default profile's "
           "`min_replication_factor`.",
      why="Auto-created topics and topics created without `--replication-factor` use it; the "
          "Kafka default is 1, a single copy.",
      example="`default.replication.factor` left at Kafka's default 1.",
      fix="Set `default.replication.factor=3` in server.properties (or as a cluster-wide "
          "dynamic default).")
def default_replication_factor(ctx: ClusterContext) -> Iterator[Violation]:
    """default.replication.factor below the floor."""
    if not _brokers_known(ctx.snapshot):
        return
    floor = ctx.thresholds.min_replication_factor
    for subject, value in broker_values(ctx.snapshot, "default.replication.factor"):
        rf = as_int(value, 1)
        if rf < floor:
            yield Violation(subject,
                            f"default.replication.factor={rf} on {where_on(subject)} "
                            f"({provenance(value)}) gives new topics fewer than {floor} "
                            "replicas unless their creator asks for more.",
                            expected=f">= {floor}", actual=str(rf), source=value.source.value)


@rule("KA305", "broker.default-min-isr", Severity.warning,
      "Topics that do not set min.insync.replicas inherit too low a value.", scope="cluster",
      what="Compares the brokers' `min.insync.replicas` with the default profile's "
           "`min_insync_replicas`.",
      why="Every topic that does not pin min.insync.replicas inherits it; Kafka's default 1 "
          "makes acks=all no safer than acks=1 once the ISR shrinks.",
      example="`min.insync.replicas` left at Kafka's default 1.",
      fix="Set `min.insync.replicas=2` on the brokers, and pin it on durable topics too.")
def default_min_isr(ctx: ClusterContext) -> Iterator[Violation]:
    """Broker min.insync.replicas below the floor."""
    if not _brokers_known(ctx.snapshot):
        return
    floor = ctx.thresholds.min_insync_replicas
    for subject, value in broker_values(ctx.snapshot, "min.insync.replicas"):
        min_isr = as_int(value, 1)
        if min_isr < floor:
            yield Violation(subject,
                            f"min.insync.replicas={min_isr} on {where_on(subject)} "
                            f"({provenance(value)}) is inherited by every topic that does not "
                            "set its own.",
                            expected=f">= {floor}", actual=str(min_isr), source=value.source.value)


@rule("KA306", "broker.auto-create-topics", Severity.warning,
      "Brokers create topics on first use, with default settings.", scope="cluster",
      what="Reports `auto.create.topics.enable=true` when the default profile does not allow "
           "it (`allow_auto_create_topics`).",
      why="A typo in a producer's topic name creates a new topic with broker defaults (often "
          "RF=1, min.insync.replicas=1) and the data goes there instead of failing loudly.",
      example="`auto.create.topics.enable` left at Kafka's default true.",
      fix="Set `auto.create.topics.enable=false` and create topics explicitly (with kaudit "
          "checking the manifests).")
def auto_create_topics(ctx: ClusterContext) -> Iterator[Violation]:
    """auto.create.topics.enable=true where not allowed."""
    if not _brokers_known(ctx.snapshot) or ctx.thresholds.allow_auto_create_topics:
        return
    for subject, value in broker_values(ctx.snapshot, "auto.create.topics.enable"):
        if as_bool(value):
            yield Violation(subject,
                            f"auto.create.topics.enable=true on {where_on(subject)} "
                            f"({provenance(value)}) lets a mistyped topic name create a topic "
                            "with default settings.",
                            expected="false", actual="true", source=value.source.value)


@rule("KA307", "broker.unclean-leader-election", Severity.error,
      "Unclean leader election is on for the brokers (every topic that does not override it).",
      scope="cluster",
      what="Reports broker-level `unclean.leader.election.enable=true` when the default "
           "profile does not allow it. Set as the cluster-wide dynamic default, it is what "
           "the active controller applies to every topic without its own value. Set in a "
           "broker's server.properties or as one broker's dynamic config, it elects nobody "
           "in KRaft (the controller decides from the topic's value, the cluster-wide "
           "default and its own server.properties, which the brokers do not show); the "
           "finding says so and names the controllers' files as what to check.",
      why="Every topic without its own setting inherits it: an out-of-sync replica may become "
          "leader and acknowledged messages vanish.",
      example="`kafka-configs.sh --entity-type brokers --entity-default --alter --add-config "
              "unclean.leader.election.enable=true`; or the same line in the server.properties "
              "every node is built from.",
      fix="Set `unclean.leader.election.enable=false` (the Kafka default) in the cluster-wide "
          "default, the controllers' and the brokers' server.properties.")
def broker_unclean_leader_election(ctx: ClusterContext) -> Iterator[Violation]:
    """Broker unclean.leader.election.enable=true."""
    if not _brokers_known(ctx.snapshot) or ctx.thresholds.allow_unclean_leader_election:
        return
    for subject, value in broker_values(ctx.snapshot, "unclean.leader.election.enable"):
        if as_bool(value):
            yield Violation(subject,
                            f"unclean.leader.election.enable=true on {where_on(subject)} "
                            f"({provenance(value)}) {_unclean_effect(value)}.",
                            expected="false", actual="true", source=value.source.value)


def _unclean_effect(value: ConfigValue) -> str:
    """What a broker-level unclean election value does in KRaft, where the active controller
    elects: the cluster-wide dynamic default is its input; a broker's own value is not."""
    if value.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG:
        return ("is what the active controller applies to every topic that does not set its "
                "own, so such a topic can lose acknowledged messages on leader failover")
    return ("elects nobody itself: in KRaft the active controller decides from the topic's "
            "value, the cluster-wide dynamic default and its own server.properties, which "
            "the brokers do not show; if the controllers' files say true as well, every topic "
            "that does not set its own can lose acknowledged messages on leader failover "
            "(Kafka describes such topics with this value either way)")
