"""A probe run's settings and its report: what :func:`kaudit.probe.runner.run_probe` takes
and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kaudit.errors import InputError
from kaudit.probe.causes import LossCauses
from kaudit.probe.faults.registry import (
    SHORT_REQUEST_TIMEOUT_MS,
    FaultAt,
    FaultSpec,
    describe_fault_at,
)
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.verifier import Verification

DEFAULT_DELIVERY_TIMEOUT_MS = 30_000


#: Producer properties that kaudit's own options set, by every librdkafka name for them:
#: given with --producer-property they would override the option silently, and the report
#: (and the verdict, which depends on acks and idempotence) would describe another producer.
OPTION_PROPERTIES = {
    "acks": "--acks", "request.required.acks": "--acks",
    "enable.idempotence": "--idempotence/--no-idempotence",
    "transactional.id": "--transactional",
    "retries": "--retries", "message.send.max.retries": "--retries",
    "max.in.flight.requests.per.connection": "--max-in-flight", "max.in.flight": "--max-in-flight",
    "linger.ms": "--linger-ms", "queue.buffering.max.ms": "--linger-ms",
    "compression.type": "--compression", "compression.codec": "--compression",
}


def check_producer_properties(properties: dict[str, str]) -> dict[str, str]:
    """``properties`` if none of them is one of kaudit's own options; else an input error
    naming the option to use."""
    for key in properties:
        option = OPTION_PROPERTIES.get(key.strip().lower())
        if option is not None:
            raise InputError(f"--producer-property {key}: use {option}, which the report and "
                             "the verdict follow")
    return properties


@dataclass(frozen=True)
class ProbeSettings:
    """Everything that shapes one probe run."""

    topic: str | None = None
    existing: bool = False
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int | None = 2
    unclean_leader_election: bool | None = None
    acks: str = "all"
    idempotence: bool = True
    transactional: bool = False
    txn_size: int = 100
    abort_ratio: float = 0.0
    retries: int | None = None
    max_in_flight: int | None = None
    linger_ms: int | None = None
    compression: str | None = None
    message_size: int = 100
    rate: float | None = None
    count: int | None = None
    duration: float | None = None
    faults: tuple[FaultSpec, ...] = ()
    fault_at: FaultAt = ("progress", 0.4)
    fault_duration: float = 10.0
    expect: str | None = None
    keep: bool = False
    lab_state_dir: Path | None = None
    e2e_latency: bool = True
    max_unavailable: float | None = None
    """Fail the run when writes were refused or unanswered for longer than this (seconds)."""
    producer_properties: dict[str, str] = field(default_factory=dict)
    """Extra producer-only properties (e.g. request.timeout.ms for duplicate experiments)."""

    def __post_init__(self) -> None:
        check_producer_properties(self.producer_properties)

    def producer_config(self) -> dict[str, Any]:
        """librdkafka producer settings for these options."""
        conf: dict[str, Any] = {
            "acks": self.acks,
            "enable.idempotence": self.idempotence or self.transactional,
            "message.timeout.ms": DEFAULT_DELIVERY_TIMEOUT_MS,
        }
        for key, value in (("retries", self.retries),
                           ("max.in.flight.requests.per.connection", self.max_in_flight),
                           ("linger.ms", self.linger_ms), ("compression.type", self.compression)):
            if value is not None:
                conf[key] = value
        if any(f.registered.shortens_request_timeout for f in self.faults):
            # The fault times requests out on purpose: they must give up before the
            # brokers are resumed (see faults.registry.LOSE_RESPONSES_DEFAULT_S).
            conf["request.timeout.ms"] = SHORT_REQUEST_TIMEOUT_MS
        conf.update(self.producer_properties)
        return conf

    def describe(self) -> dict[str, Any]:
        """The settings as the report shows them."""
        return {
            "partitions": self.partitions, "replication_factor": self.replication_factor,
            "min_insync_replicas": self.min_insync_replicas,
            "unclean_leader_election": self.unclean_leader_election,
            "acks": self.acks, "idempotence": self.idempotence or self.transactional,
            "transactional": self.transactional,
            "txn_size": self.txn_size if self.transactional else None,
            "abort_ratio": self.abort_ratio if self.transactional else None,
            "retries": self.retries, "max_in_flight": self.max_in_flight,
            "linger_ms": self.linger_ms, "compression": self.compression,
            "message_size": self.message_size, "rate": self.rate, "count": self.count,
            "duration": self.duration, "faults": [f.label() for f in self.faults],
            "fault_at": describe_fault_at(self.fault_at) if self.faults else None,
            "fault_duration": self.fault_duration if self.faults else None,
            "expect": self.expect, "max_unavailable": self.max_unavailable,
            "existing_topic": self.existing,
            "producer_properties": dict(self.producer_properties),
        }


@dataclass(frozen=True)
class ProbeReport:
    """The outcome of one run."""

    run_id: str
    topic: str
    settings: ProbeSettings
    verification: Verification
    ledger: Ledger
    ack_latency: LatencyHistogram
    e2e_latency: LatencyHistogram | None
    timeline: Timeline
    events: list[ProbeEvent]
    produce_seconds: float
    held_seconds: float
    """Of ``produce_seconds``, held open after the last send until the fault schedule
    ended."""
    total_seconds: float
    send_errors: dict[str, int]
    drain_complete: bool
    interrupted: bool
    topic_deleted: bool
    notes: list[str]
    live_verification: bool = False
    """Whether pass 1 was the live pass, read while producing (see :mod:`kaudit.probe.runner`)."""
    read_then_lost: int | None = None
    """Lost messages a reader had been shown while the run wrote (None: no such reader,
    ``--no-e2e-latency``). Kafka promises 0: readers see only the high watermark."""
    loss_causes: LossCauses | None = None
    """Why the lost messages were lost (None when none was)."""
    read_then_lost_causes: LossCauses | None = None
    """Why the ``read_then_lost`` messages were lost (None when none was)."""

    @property
    def verdict(self) -> str:
        """``pass`` or ``fail`` for the expected semantics; ``inconclusive`` when nothing
        was acknowledged: such a run has shown nothing about delivery."""
        if self.inconclusive():
            return "inconclusive"
        return "fail" if self.violations() else "pass"

    def inconclusive(self) -> bool:
        """Whether no send was acknowledged (the verdict can then say nothing)."""
        return self.verification.acked == 0

    def inconclusive_reason(self) -> str:
        """Why :meth:`inconclusive`, in a few words (for the proof's table)."""
        return "nothing acknowledged"

    def violations(self) -> list[str]:
        """One line per reason the verdict is not ``pass``."""
        if self.inconclusive():
            out = [f"inconclusive: none of {self.verification.sent} message(s) was "
                   "acknowledged, so the run shows nothing about delivery"]
            return out + self.permanent_errors()
        out = list(self.verification.violations(self.settings.expect))
        if self.loss_causes is not None:
            # The lost line says why, where Kafka gave a signal for it.
            out = [f"{v}: {self.loss_causes.sentence()}" if v.startswith("lost:") else v
                   for v in out]
        if not self.drain_complete:
            out.append("could not read every partition back past its last acknowledged offset")
        if self.read_then_lost:
            why = "" if self.read_then_lost_causes is None else \
                f": {self.read_then_lost_causes.sentence()}"
            out.append(f"read_then_lost: {self.read_then_lost} message(s) a reader was shown "
                       f"were lost afterwards{why}")
        unavailable = self.timeline.summary()["unavailable_seconds"]
        limit = self.settings.max_unavailable
        if limit is not None and unavailable > limit:
            out.append(f"unavailable: writes were refused or unanswered for {unavailable}s, "
                       f"more than --max-unavailable {limit:g}s")
        return out

    def permanent_errors(self) -> list[str]:
        """Send errors no retry can fix, each with the setting that causes it."""
        out = []
        for name, count in sorted(self.send_errors.items()):
            hint = PERMANENT_ERRORS.get(name.upper().lstrip("_"))
            if hint:
                out.append(f"{name} x{count}: permanent, "
                           + hint.format(message_size=self.settings.message_size))
        return out


PERMANENT_ERRORS = {
    "MSG_SIZE_TOO_LARGE": "a --message-size of {message_size} bytes is above the producer's "
                          "message.max.bytes or the topic's max.message.bytes",
    "MESSAGE_TOO_LARGE": "a --message-size of {message_size} bytes is above the topic's "
                         "max.message.bytes",
    "RECORD_LIST_TOO_LARGE": "a batch is above the topic's segment.bytes; lower "
                             "--message-size ({message_size}) or batch.size",
    "TOPIC_AUTHORIZATION_FAILED": "the principal has no WRITE permission on the topic",
    "CLUSTER_AUTHORIZATION_FAILED": "idempotent writes need IDEMPOTENT_WRITE on the cluster "
                                    "(or --no-idempotence)",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "--transactional needs WRITE on the "
                                             "transactional id kaudit-probe-*",
    "UNKNOWN_TOPIC_OR_PART": "the topic or partition does not exist on the brokers",
    "UNKNOWN_TOPIC": "the topic does not exist",
    "UNKNOWN_PARTITION": "the partition does not exist",
    "UNSUPPORTED_COMPRESSION_TYPE": "the brokers do not accept --compression",
    "INVALID_REQUIRED_ACKS": "the brokers do not accept this --acks value",
    "POLICY_VIOLATION": "a broker policy rejects these writes",
}
"""Send errors no retry can fix (name without a leading underscore), with their cause."""

