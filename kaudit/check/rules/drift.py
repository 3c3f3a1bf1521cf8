"""KA316: durability and security settings that differ between brokers.

Each broker's configs are read from that broker (DescribeConfigs on its BROKER resource),
with where each value came from. A static file out of step after a partial rollout, or a
per-broker dynamic config left behind after an incident, makes a partition's guarantees
depend on which broker leads or hosts it; nothing else names it. The controllers' own
configs cannot be read through the brokers and are not compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from kaudit.check.findings import Severity, Subject, SubjectKind
from kaudit.check.rules.common import provenance
from kaudit.check.rules.features import ELR
from kaudit.check.rules.registry import ClusterContext, Violation, rule
from kaudit.cluster.model import ClusterSnapshot, ConfigValue

Kind = Literal["int", "bool", "list", "text"]


@dataclass(frozen=True)
class Setting:
    """A setting whose value should be the same on every broker, and why."""

    kind: Kind
    """How its values compare: as numbers, booleans, sets of items, or text."""
    effect: str
    """What a difference does, as the end of a finding's sentence."""
    separator: str = ","


_LEADER = "depending on which broker leads the partition"
_FIRST = "the broker that creates {topic} (on first use) gives it its own value, so its " \
    "durability depends on which broker got there first"

# What each broker's own value still governs, in the operator's words. Only settings a
# broker applies itself are here; where Kafka decides elsewhere (unclean election) it says so.
DRIFT_SETTINGS: dict[str, Setting] = {
    # Each leader checks acks=all writes against its own value for topics that set none
    # (unless ELR is on: then the controller keeps one cluster-wide value, see below).
    "min.insync.replicas": Setting("int", "an acks=all write to a topic that does not set "
                                   "it needs a different number of in-sync copies "
                                   f"{_LEADER}"),
    # The broker that auto-creates a topic fills in the replication factor; topics created
    # through the Admin API without one get the active controller's instead.
    "default.replication.factor": Setting("int", "a topic a client creates by naming it "
                                          "(auto.create.topics.enable) gets a different "
                                          "number of copies depending on the broker it "
                                          "asked"),
    # KRaft's controller elects leaders (Kafka 3.9+: from the topic's setting, its own node's
    # settings and the cluster-wide dynamic default), so a broker's value elects nobody; but
    # Kafka describes a topic that does not set it with the answering broker's value.
    "unclean.leader.election.enable": Setting(
        "bool", "in KRaft the active controller decides unclean elections from the topic's "
        "setting, its own settings and the cluster-wide dynamic default, not from these "
        "brokers' values, yet a topic that does not set it is described with the value of "
        "whichever broker answers (kaudit judges such topics by the weakest, KA108)"),
    # The leader shrinks the ISR by its own clock: a slow follower stays in (holding
    # acks=all writes) or drops out (fewer copies acknowledge) sooner under some leaders.
    "replica.lag.time.max.ms": Setting("int", "a slow follower leaves the ISR sooner under "
                                       "some leaders than others, so acks=all writes are "
                                       f"acknowledged by fewer copies sooner {_LEADER}"),
    # fsync policy is per broker, for the logs it hosts.
    "log.flush.interval.messages": Setting("int", "each broker forces what it hosts to disk "
                                           "by its own rule, so how much acknowledged data a "
                                           "power loss can take depends on where a partition "
                                           "lives"),
    "log.flush.interval.ms": Setting("int", "each broker forces what it hosts to disk by its "
                                     "own rule, so how much acknowledged data a power loss "
                                     "can take depends on where a partition lives"),
    # The leader deletes old segments by its own retention; followers follow its log start.
    **dict.fromkeys(("log.retention.ms", "log.retention.hours", "log.retention.bytes"),
                    Setting("int", "records of a topic that does not set its own retention "
                            f"are deleted sooner or later {_LEADER}, unread ones too")),
    # A client naming a missing topic creates it through some brokers, fails on others.
    "auto.create.topics.enable": Setting("bool", "a client that names a topic that does not "
                                         "exist creates it through some brokers and is told "
                                         "it does not exist by others"),
    # Kafka's own state topics are created once, with the creating broker's settings.
    "offsets.topic.replication.factor": Setting(
        "int", _FIRST.format(topic="__consumer_offsets")),
    "transaction.state.log.replication.factor": Setting(
        "int", _FIRST.format(topic="__transaction_state")),
    "transaction.state.log.min.isr": Setting(
        "int", _FIRST.format(topic="__transaction_state")),
    "share.coordinator.state.topic.replication.factor": Setting(
        "int", _FIRST.format(topic="__share_group_state")),
    "share.coordinator.state.topic.min.isr": Setting(
        "int", _FIRST.format(topic="__share_group_state")),
    # Each transaction coordinator aborts by its own limit.
    "transaction.max.timeout.ms": Setting("int", "a transaction may stay open (holding "
                                          "read_committed readers back) longer on some "
                                          "transaction coordinators than on others"),
    # Security: a client is let in, named and authorized by the broker it talks to.
    "listener.security.protocol.map": Setting("list", "a listener name carries a different "
                                              "protocol on some brokers, so a client set up "
                                              "for one broker cannot connect, or is not "
                                              "authenticated, on another"),
    "ssl.client.auth": Setting("text", "some brokers demand a client certificate and others "
                               "let a client in without one"),
    "ssl.enabled.protocols": Setting("list", "some brokers accept TLS versions that others "
                                     "refuse"),
    "sasl.enabled.mechanisms": Setting("list", "a client's SASL mechanism is accepted by some "
                                       "brokers only"),
    "authorizer.class.name": Setting("text", "ACLs are enforced by some brokers only: what "
                                     "one refuses, another (leading other partitions) "
                                     "allows"),
    "allow.everyone.if.no.acl.found": Setting("bool", "a resource without ACLs is open to "
                                              "everyone on some brokers only"),
    "super.users": Setting("list", "a principal bypasses every ACL on some brokers only",
                           separator=";"),
    "principal.builder.class": Setting("text", "the same client becomes a different principal "
                                       "on different brokers, so its ACLs match on some "
                                       "only"),
    "ssl.principal.mapping.rules": Setting("text", "the same certificate becomes a different "
                                           "principal on different brokers, so its ACLs "
                                           "match on some only"),
    "sasl.kerberos.principal.to.local.rules": Setting("text", "the same Kerberos user becomes "
                                                      "a different principal on different "
                                                      "brokers, so its ACLs match on some "
                                                      "only"),
}

_ELR_FIXED = "min.insync.replicas"


def comparable(setting: Setting, value: str | None) -> object:
    """A value in its own type: a number, a boolean, a set of items, or stripped text
    (``3`` and `` 3``, ``PLAIN,SCRAM-SHA-512`` and ``SCRAM-SHA-512, PLAIN`` agree)."""
    if value is None:
        return None
    text = value.strip()
    if setting.kind == "int":
        try:
            return int(text)
        except ValueError:
            return text
    if setting.kind == "bool":
        return text.lower()
    if setting.kind == "list":
        return frozenset(item.strip() for item in text.split(setting.separator) if item.strip())
    return text


@rule("KA316", "broker.config-drift", Severity.warning,
      "A durability or security setting differs between brokers.", scope="cluster",
      what="Compares each broker's value of the durability and security settings a broker "
           "applies itself (min.insync.replicas, default.replication.factor, "
           "replica.lag.time.max.ms, log.flush.*, log.retention.*, "
           "auto.create.topics.enable, the internal topics' replication settings, "
           "transaction.max.timeout.ms, listener.security.protocol.map, ssl.client.auth, "
           "ssl.enabled.protocols, sasl.enabled.mechanisms, authorizer.class.name, "
           "allow.everyone.if.no.acl.found, super.users, principal mapping; and "
           "unclean.leader.election.enable, which in KRaft the controller decides), values "
           "compared in their own types. Where most brokers agree, each other broker is a "
           "finding with its value and where it came from; where none do, every broker is. "
           "With Eligible Leader Replicas on (`eligible.leader.replicas.version` >= 1) "
           "min.insync.replicas is not compared: the controller keeps one cluster-wide value "
           "and Kafka refuses per-broker ones (KAFKA-16540). Hidden (sensitive) values and "
           "the controllers' own configs are not compared.",
      why="A partition's guarantees come from the broker that leads or hosts it: with one "
          "broker out of step (a static file missed by a rolling change, a per-broker "
          "dynamic config left from an incident) a topic is durable on two brokers and not "
          "on the third, and which one leads changes with every failover. kaudit's other "
          "rules then report the weakest value; this one says where it is.",
      example="`log.flush.interval.messages=1` set on broker 2 alone with kafka-configs.sh "
              "`--entity-name 2`; or `min.insync.replicas=1` left in one broker's "
              "server.properties.",
      fix="Set the value once for the cluster (`kafka-configs.sh --entity-type brokers "
          "--entity-default --alter`) and delete the per-broker dynamic one "
          "(`--entity-name ID --alter --delete-config KEY`), or roll the corrected "
          "server.properties to every broker.")
def config_drift(ctx: ClusterContext) -> Iterator[Violation]:
    """Each DRIFT_SETTINGS key whose brokers disagree."""
    snapshot = ctx.snapshot
    if len(snapshot.broker_configs) < 2:
        return
    elr = (snapshot.feature_level(ELR) or 0) >= 1
    for name, setting in DRIFT_SETTINGS.items():
        if name == _ELR_FIXED and elr:
            continue  # one cluster-wide value: per-broker ones are refused (KAFKA-16540)
        yield from _drift(snapshot, name, setting)


def _drift(snapshot: ClusterSnapshot, name: str, setting: Setting) -> Iterator[Violation]:
    values = {bid: v for bid, v in snapshot.broker_config_values(name).items()
              if not v.sensitive}
    groups: dict[object, list[int]] = {}
    for bid, value in values.items():
        groups.setdefault(comparable(setting, value.value), []).append(bid)
    if len(groups) < 2:
        return
    largest = max(groups.values(), key=len)
    majority = largest if len(largest) * 2 > len(values) else []
    for bid, value in values.items():
        if bid in majority:
            continue
        others = [ids for ids in groups.values() if bid not in ids]
        said = "; ".join(_held(values, ids) for ids in others)
        expected = (f"{_shown(values[majority[0]])} (as on {_brokers(majority)})" if majority
                    else "the same value on every broker")
        yield Violation(Subject(SubjectKind.broker, str(bid)),
                        f"{name} is {_shown(value)} on broker {bid} ({provenance(value)}) but "
                        f"{said}: {setting.effect}.",
                        expected=expected, actual=_shown(value), source=value.source.value)


def _shown(value: ConfigValue) -> str:
    return "not set" if value.value is None else value.value


def _brokers(ids: list[int]) -> str:
    return f"broker{'s' if len(ids) > 1 else ''} {', '.join(str(i) for i in ids)}"


def _held(values: dict[int, ConfigValue], ids: list[int]) -> str:
    """``3 on brokers 1, 3 (inherited from ...)``: one value, its brokers, its sources."""
    sources = "; ".join(dict.fromkeys(provenance(values[i]) for i in ids))
    return f"{_shown(values[ids[0]])} on {_brokers(ids)} ({sources})"
