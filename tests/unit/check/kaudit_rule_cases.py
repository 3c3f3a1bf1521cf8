"""Build models from the small YAML fragments of tests/rules/*.yaml and run them.

A case file is ``{rule: KA101, pass: [case...], fail: [case...]}``; a case
holds a snapshot fragment plus optional policy and client configs:

- ``brokers``: a count (ids 1..n, no racks; default 3) or ``[{id, rack}]``
- ``broker_configs``: ``{name: value | {value, source}}`` on every broker
  (source STATIC_BROKER_CONFIG unless given); ``per_broker: {id: {...}}``
- ``live`` (default true), ``unreadable`` (list), ``cluster_id``
- ``topics``: ``[{name, internal, replication_factor, partitions, configs}]``;
  ``partitions`` is a count (healthy, replicas on the first RF brokers) or
  ``[{leader, replicas, isr, elr, last_known_elr}]`` (no ``elr``: not read);
  configs are ``{name: value | {value, source}}``
  with source DYNAMIC_TOPIC_CONFIG unless given
- ``offsets``: ``[{topic, partition, log_start, high_watermark, last_stable,
  open_minutes_ago}]`` (last_stable defaults to high_watermark)
- ``groups``: ``[{group_id, state, members, offsets: [{topic, partition, committed,
  unread_minutes_ago}]}]``; minutes are counted back from the snapshot's time
- ``features``: ``{name: level}``, the finalized features (absent: not read)
- ``share_groups``: ``[{group_id, state, members (a count), subscribed ([topic]),
  configs ({name: value}), partitions: [{topic, partition, start_offset, lag,
  undelivered_minutes_ago}]}]`` (absent: not read)
- ``quorum``: ``{leader, epoch, high_watermark, voters: [id | {id, log_end_offset,
  caught_up_seconds_ago}]}`` (absent: not read); a voter given by id alone holds the
  leader's whole log as of the snapshot's time; ``log_end_offset: null`` with no
  ``caught_up_seconds_ago`` is a voter the leader never heard from
- ``acls``: ``[{type, name, pattern, principal, host, operation, permission}]``, the ACL
  bindings (defaults: type TOPIC, pattern LITERAL, host ``*``, permission ALLOW; absent:
  not read), ``acls_unread``: why they were not read
- ``policy``: a built-in name, an inline policy mapping, or a list of them
- ``files``: ``{relative name: text}`` written next to the policy
- ``producer`` / ``consumer``: ``{key: value}`` (or a list of them) written as
  ``producer.properties`` (``producer-2.properties``...), one key per line
- ``today``: the date waivers are judged on (default 2026-06-01)
- ``expect`` (fail cases): the findings of the rule, in result order, each a
  partial ``{subject: "kind name", severity, expected, actual, source,
  message (substring), waived (bool)}``
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from kaudit.check.clients import ClientConfig, load_client_config
from kaudit.check.engine import evaluate
from kaudit.check.findings import CheckResult, Finding
from kaudit.check.policy.loader import load_policies
from kaudit.cluster.model import (
    AclBinding,
    Broker,
    ClusterSnapshot,
    ConfigSource,
    ConfigValue,
    ConsumerGroup,
    GroupOffset,
    PartitionOffsets,
    PartitionState,
    ShareGroup,
    ShareMember,
    SharePartition,
    Topic,
    freeze_configs,
)
from kaudit.cluster.quorum import QuorumReplica, QuorumState

CASES_DIR = Path(__file__).resolve().parents[2] / "rules"
DEFAULT_TODAY = date(2026, 6, 1)
TAKEN_AT = "2026-06-01T00:00:00+00:00"
TAKEN_AT_MS = 1_780_272_000_000


def _ago(minutes: float | None) -> int | None:
    return None if minutes is None else int(TAKEN_AT_MS - minutes * 60_000)


def _offsets(case: dict[str, Any]) -> tuple[PartitionOffsets, ...]:
    return tuple(PartitionOffsets(
        topic=o["topic"], partition=int(o.get("partition", 0)), log_start=int(o["log_start"]),
        high_watermark=int(o["high_watermark"]),
        last_stable=int(o.get("last_stable", o["high_watermark"])),
        open_since_ms=_ago(o.get("open_minutes_ago"))) for o in case.get("offsets", ()))


def _groups(case: dict[str, Any]) -> tuple[ConsumerGroup, ...] | None:
    if "groups" not in case:
        return None
    return tuple(ConsumerGroup(
        group_id=g["group_id"], state=g.get("state", "STABLE"), members=int(g.get("members", 1)),
        offsets=tuple(GroupOffset(topic=o["topic"], partition=int(o.get("partition", 0)),
                                  committed=o.get("committed"),
                                  unread_since_ms=_ago(o.get("unread_minutes_ago")))
                      for o in g.get("offsets", ()))) for g in case["groups"])


def _share_groups(case: dict[str, Any]) -> tuple[ShareGroup, ...] | None:
    if "share_groups" not in case:
        return None
    return tuple(ShareGroup(
        group_id=g["group_id"], state=g.get("state", "Stable"), coordinator=1,
        members=tuple(ShareMember(member_id=f"m{i}", client_id="c", host="127.0.0.1",
                                  member_epoch=1, subscribed=tuple(g.get("subscribed", ())))
                      for i in range(int(g.get("members", 1)))),
        partitions=tuple(SharePartition(
            topic=s["topic"], partition=int(s.get("partition", 0)),
            start_offset=s.get("start_offset"), lag=s.get("lag"),
            undelivered_since_ms=_ago(s.get("undelivered_minutes_ago")))
            for s in g.get("partitions", ())),
        configs=_configs(g.get("configs"), ConfigSource.GROUP_CONFIG))
        for g in case["share_groups"])


def _quorum(case: dict[str, Any]) -> QuorumState | None:
    raw = case.get("quorum")
    if raw is None:
        return None
    end = int(raw.get("high_watermark", 500))

    def voter(spec: int | dict[str, Any]) -> QuorumReplica:
        spec = {"id": spec} if isinstance(spec, int) else spec
        ago = spec.get("caught_up_seconds_ago", 0 if "log_end_offset" not in spec else None)
        return QuorumReplica(replica_id=int(spec["id"]),
                             log_end_offset=spec.get("log_end_offset", end),
                             last_caught_up_ms=None if ago is None
                             else int(TAKEN_AT_MS - ago * 1000))

    return QuorumState(leader_id=raw.get("leader", 100), leader_epoch=int(raw.get("epoch", 1)),
                       high_watermark=end, voters=tuple(voter(v) for v in raw["voters"]),
                       answered_by=1)
def acl_bindings(raw: list[dict[str, Any]] | None) -> tuple[AclBinding, ...] | None:
    """The ACL bindings of a case (None: not read)."""
    if raw is None:
        return None
    return tuple(AclBinding(
        resource_type=a.get("type", "TOPIC"), resource_name=str(a["name"]),
        pattern_type=a.get("pattern", "LITERAL"), principal=a["principal"],
        host=a.get("host", "*"), operation=a["operation"],
        permission=a.get("permission", "ALLOW")) for a in raw)


def _configs(raw: dict[str, Any] | None, default_source: ConfigSource) -> Any:
    out: dict[str, ConfigValue] = {}
    for name, spec in (raw or {}).items():
        if isinstance(spec, dict):
            value, source = spec.get("value"), ConfigSource(spec.get("source", default_source))
        else:
            value, source = spec, default_source
        text = None if value is None else (str(value).lower() if isinstance(value, bool)
                                           else str(value))
        out[name] = ConfigValue(name=name, value=text, source=source)
    return freeze_configs(out)


def _maybe_ids(raw: list[int] | None) -> tuple[int, ...] | None:
    return None if raw is None else tuple(raw)


def build_snapshot(case: dict[str, Any]) -> ClusterSnapshot:
    """The ClusterSnapshot a case describes."""
    raw_brokers = case.get("brokers", 3)
    if isinstance(raw_brokers, int):
        brokers = tuple(Broker(id=i, host="localhost", port=9091 + i)
                        for i in range(1, raw_brokers + 1))
    else:
        brokers = tuple(Broker(id=int(b["id"]), host="localhost", port=9092 + int(b["id"]),
                               rack=b.get("rack")) for b in raw_brokers)
    live = bool(case.get("live", True))
    shared = case.get("broker_configs")
    per_broker = case.get("per_broker", {})
    broker_configs = {}
    if shared is not None or per_broker:
        for b in brokers:
            merged = dict(shared or {})
            merged.update(per_broker.get(b.id, {}))
            broker_configs[b.id] = _configs(merged, ConfigSource.STATIC_BROKER_CONFIG)
    ids = [b.id for b in brokers]
    topics = []
    for t in case.get("topics", []):
        parts_spec = t.get("partitions", 1)
        if isinstance(parts_spec, int):
            rf = int(t.get("replication_factor", 3))
            replicas = tuple(ids[:rf]) if len(ids) >= rf else tuple(range(1, rf + 1))
            partitions = tuple(PartitionState(partition=i, leader=replicas[0],
                                              replicas=replicas, isr=replicas)
                               for i in range(parts_spec)) if live else ()
            count = parts_spec
        else:
            partitions = tuple(PartitionState(partition=i, leader=p.get("leader"),
                                              replicas=tuple(p["replicas"]),
                                              isr=tuple(p.get("isr", p["replicas"])),
                                              elr=_maybe_ids(p.get("elr")),
                                              last_known_elr=_maybe_ids(p.get("last_known_elr")))
                               for i, p in enumerate(parts_spec))
            count = len(partitions)
            rf = int(t.get("replication_factor", max(len(p.replicas) for p in partitions)))
        topics.append(Topic(name=t["name"], internal=bool(t.get("internal", False)),
                            partition_count=count, replication_factor=rf,
                            configs=_configs(t.get("configs"), ConfigSource.DYNAMIC_TOPIC_CONFIG),
                            partitions=partitions))
    return ClusterSnapshot(cluster_id=case.get("cluster_id", "test-cluster"), controller_id=1,
                           brokers=brokers, broker_configs=MappingProxyType(broker_configs),
                           topics=tuple(topics), taken_at=TAKEN_AT,
                           origin="live" if live else "manifests", live=live,
                           unreadable=tuple(case.get("unreadable", ())),
                           offsets=_offsets(case), groups=_groups(case),
                           share_groups=_share_groups(case), quorum=_quorum(case),
                           acls=acl_bindings(case.get("acls")),
                           acls_unread=case.get("acls_unread"),
                           features=None if "features" not in case else MappingProxyType(
                               {k: str(v) for k, v in case["features"].items()}))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _write_clients(case: dict[str, Any], role: str, tmp: Path) -> list[ClientConfig]:
    out = []
    for i, entries in enumerate(_as_list(case.get(role)), start=1):
        name = f"{role}.properties" if i == 1 else f"{role}-{i}.properties"
        lines = [f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                 for k, v in entries.items()]
        (tmp / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append(load_client_config(tmp / name, role))  # type: ignore[arg-type]
    return out


def run_case(case: dict[str, Any], tmp: Path) -> CheckResult:
    """Evaluate one case in directory ``tmp`` (files are written there)."""
    for name, text in (case.get("files") or {}).items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text, encoding="utf-8")
    refs = []
    for i, policy in enumerate(_as_list(case.get("policy", "durable"))):
        if isinstance(policy, str):
            refs.append(policy)
        else:
            file = tmp / f"policy-{i}.yaml"
            file.write_text(yaml.safe_dump(policy, sort_keys=False), encoding="utf-8")
            refs.append(str(file))
    today = case.get("today", DEFAULT_TODAY)
    return evaluate(build_snapshot(case), load_policies(refs),
                    producer_configs=_write_clients(case, "producer", tmp),
                    consumer_configs=_write_clients(case, "consumer", tmp),
                    today=today if isinstance(today, date) else date.fromisoformat(today))


def finding_view(f: Finding, tmp: Path) -> dict[str, Any]:
    """A finding as a comparable dict, with the temporary directory stripped from paths."""
    def clean(text: str | None) -> str | None:
        return None if text is None else text.replace(f"{tmp}/", "")

    return {"subject": f"{f.subject.kind} {clean(f.subject.name)}", "severity": str(f.severity),
            "expected": f.expected, "actual": f.actual, "source": clean(f.source),
            "message": clean(f.message), "waived": f.waived_by is not None}


def mismatches(expect: dict[str, Any], view: dict[str, Any]) -> list[str]:
    """The fields where a finding differs from its expectation."""
    out = []
    for key, want in expect.items():
        got = view[key]
        if key == "message":
            if str(want) not in str(got):
                out.append(f"message {got!r} lacks {want!r}")
        elif (str(want) if not isinstance(want, bool) else want) != got:
            out.append(f"{key}: expected {want!r}, got {got!r}")
    return out


def load_case_files() -> dict[str, dict[str, Any]]:
    """Every case file by rule id (file stem)."""
    return {p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in sorted(CASES_DIR.glob("*.yaml"))}
