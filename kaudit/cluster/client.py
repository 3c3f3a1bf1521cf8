"""The one door to Kafka: every client kaudit opens is built here.

Admin, producer and consumer clients come from :class:`ConnectionSettings` (:func:`new_admin`,
:func:`new_producer`, :func:`new_consumer`, :class:`AdminSession`); Spark's Kafka source
gets the same settings as Java client options (:mod:`kaudit.connection.java_options`). Nothing else
imports ``confluent_kafka``: the few of its types other modules need are handed out here,
imported on first use so that ``--help`` stays fast. Every error librdkafka reports is
collected, so that a call that times out says *why* (refused, authentication, TLS).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from kaudit.cluster.leaders import FIRST_ATTEMPT_S, LeaderGone, metadata_of, refusing_leaders
from kaudit.cluster.model import Broker
from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure, InputError
from kaudit.waiting import Deadline

rdkafka_log = logging.getLogger("kaudit.librdkafka")

#: confluent-kafka's names other modules use, by the module that defines them.
_KAFKA_NAMES = {
    **dict.fromkeys(("KafkaError", "KafkaException", "TopicPartition", "TopicCollection",
                     "IsolationLevel", "Producer", "Consumer", "ConsumerGroupTopicPartitions",
                     "AcknowledgeType"),
                    "confluent_kafka"),
    **dict.fromkeys(("AdminClient", "AclBinding", "AclOperation", "AclPermissionType",
                     "AlterConfigOpType", "ConfigEntry", "ConfigResource", "ConfigSource",
                     "NewTopic", "OffsetSpec", "ResourcePatternType", "ResourceType"),
                    "confluent_kafka.admin"),
}


def __getattr__(name: str) -> Any:
    """confluent-kafka's types, imported when first asked for (PEP 562)."""
    module = _KAFKA_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


class ErrorCollector:
    """Receives librdkafka's asynchronous errors (``error_cb``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.errors: list[Any] = []

    def __call__(self, err: Any) -> None:
        with self._lock:
            self.errors.append(err)

    def first_fatal(self) -> Any | None:
        """The first error librdkafka flagged fatal (the client can do nothing more)."""
        with self._lock:
            return next((e for e in self.errors if is_fatal(e)), None)

    def fatal(self) -> bool:
        """An error no retry will cure was seen: bad credentials or an untrusted certificate."""
        from confluent_kafka import KafkaError

        with self._lock:
            return any(e.code() in (KafkaError._AUTHENTICATION,
                                    KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._SSL)
                       for e in self.errors)

    def explain(self) -> str | None:
        """The most telling error seen: authentication and TLS before transport."""
        from confluent_kafka import KafkaError

        with self._lock:
            errors = list(self.errors)
        auth = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
        for prefix, codes in (("authentication failed", auth),
                              ("TLS handshake failed", {KafkaError._SSL})):
            if err := next((e for e in errors if e.code() in codes), None):
                return f"{prefix}: {err.str()}"
        transport = [e for e in errors if e.code() == KafkaError._TRANSPORT]
        return str((transport or errors)[-1].str()) if errors else None


def is_fatal(err: Any) -> bool:
    """Whether a KafkaError ends its client. A consumer hands its fatal errors (e.g. a
    static member fenced) to consume() as code ``_FATAL`` with ``fatal()`` False, so the
    code is checked too."""
    from confluent_kafka import KafkaError

    return bool(err.fatal()) or err.code() == KafkaError._FATAL


def fatal_error(exc: BaseException) -> Any:
    """The fatal KafkaError ``exc`` carries, else None. librdkafka raises a producer's
    fatal error from ``poll`` and ``flush`` too (not through error_cb), so a caller that
    polls tells that outcome from a bug with this."""
    err = exc.args[0] if exc.args else None
    return err if hasattr(err, "fatal") and is_fatal(err) else None


def serve_reports(producer: Any, timeout: float = 0) -> Any:
    """Serve a producer's delivery reports: the fatal KafkaError raised instead, if any.
    Anything else poll raises is re-raised: a bug, not an outcome."""
    from confluent_kafka import KafkaException

    try:
        producer.poll(timeout)
    except KafkaException as exc:
        err = fatal_error(exc)
        if err is None:
            raise
        return err
    return None


def client_config(
    settings: ConnectionSettings, collector: ErrorCollector | None = None, **extra: Any
) -> dict[str, Any]:
    """The librdkafka configuration for ``settings`` plus ``extra`` keys."""
    conf: dict[str, Any] = {
        "bootstrap.servers": settings.bootstrap_servers,
        # librdkafka logs to stderr by default; route it through logging so it
        # is silent unless -vv, and redacted like everything else.
        "logger": rdkafka_log,
        # librdkafka refuses less than 1 s here; a shorter --timeout is kept by our own
        # deadlines around each wait.
        "socket.connection.setup.timeout.ms": int(max(1.0, min(settings.timeout, 30)) * 1000),
    }
    conf.update(settings.properties)
    if collector is not None:
        conf["error_cb"] = collector
    conf.update(extra)
    # kaudit never creates a topic by naming it: a metadata request for a topic it has just
    # deleted (a monitor's last sample, a producer's refresh) would re-create it with the
    # brokers' defaults (RF 1, say) on a cluster with auto.create.topics.enable=true.
    conf["allow.auto.create.topics"] = False
    return conf


def admin_config(settings: ConnectionSettings, collector: ErrorCollector) -> dict[str, Any]:
    """:func:`client_config` for kaudit's own admin reads: a broker back from a fault is
    tried again within a second, not after librdkafka's up to 10 s (a user's backoff wins;
    the producers and consumers a probe measures keep librdkafka's)."""
    config = client_config(settings, collector)
    if not {"reconnect.backoff.ms", "reconnect.backoff.max.ms"} & config.keys():
        config["reconnect.backoff.max.ms"] = 1000
    return config


def new_admin(config: dict[str, Any]) -> Any:
    """An AdminClient from a finished librdkafka configuration (see :func:`client_config`)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(config)


def new_producer(settings: ConnectionSettings, collector: ErrorCollector | None = None,
                 **extra: Any) -> Any:
    """A Producer for ``settings``; a configuration librdkafka refuses is exit 2."""
    from confluent_kafka import KafkaException, Producer

    try:
        return Producer(client_config(settings, collector, **extra))
    except (KafkaException, ValueError, TypeError) as exc:
        raise InputError(f"invalid producer configuration: {kafka_message(exc)}") from None


def new_consumer(settings: ConnectionSettings, collector: ErrorCollector | None = None,
                 **extra: Any) -> Any:
    """A Consumer for ``settings``; a configuration librdkafka refuses is exit 2."""
    from confluent_kafka import Consumer, KafkaException

    try:
        return Consumer(client_config(settings, collector, **extra))
    except (KafkaException, ValueError, TypeError) as exc:
        raise InputError(f"invalid consumer configuration: {kafka_message(exc)}") from None


#: Consumer settings a share consumer refuses (librdkafka: "not applicable for share
#: consumer"): the share group's own configs decide them (share.auto.offset.reset,
#: share.isolation.level), or the broker's. A user's properties file written for classic
#: consumers may hold them: they are left out for a share consumer, not an error.
SHARE_CONSUMER_REFUSES = frozenset({
    "enable.auto.commit", "group.protocol", "partition.assignment.strategy",
    "group.instance.id", "isolation.level", "group.remote.assignor", "queued.min.messages",
    "queued.max.messages.kbytes", "fetch.queue.backoff.ms", "fetch.error.backoff.ms",
    "enable.partition.eof", "message.copy.max.bytes", "topic.blacklist", "auto.offset.reset",
    "consume.callback.max.messages", "allow.auto.create.topics", "socket.max.fails",
    "rebalance_cb", "offset_commit_cb", "consume_cb", "on_commit",
})


def new_share_consumer(settings: ConnectionSettings, group: str,
                       collector: ErrorCollector | None = None, **extra: Any) -> Any:
    """A member of share group ``group`` (KIP-932; confluent-kafka's ShareConsumer, a
    preview) that acknowledges each record itself (``acknowledge(msg, ACCEPT|RELEASE|
    REJECT)``); a configuration librdkafka refuses is exit 2. Its "Preview" warning is a
    librdkafka log line: it goes to the log with the others, not to the terminal."""
    from confluent_kafka import KafkaException, ShareConsumer

    # librdkafka refuses allow.auto.create.topics on a share consumer, even False; a share
    # consumer only subscribes, and the probe creates its topic before any member starts.
    config = {k: v for k, v in client_config(settings, collector, **extra).items()
              if k not in SHARE_CONSUMER_REFUSES}
    config.update({"group.id": group, "share.acknowledgement.mode": "explicit"})
    try:
        return ShareConsumer(config)
    except (KafkaException, ValueError, TypeError) as exc:
        said = " ".join(kafka_message(exc).split())  # librdkafka's ends with a newline
        raise InputError(f"invalid share consumer configuration: {said}") from None


def kafka_message(exc: BaseException) -> str:
    """The text of a KafkaException (or any exception) without its repr noise."""
    arg = exc.args[0] if exc.args else exc
    text = arg.str() if hasattr(arg, "str") else str(arg)
    return str(text)


def unreachable(settings: ConnectionSettings, collector: ErrorCollector,
                exc: BaseException | None = None) -> ConnectionFailure:
    """The one "cannot reach Kafka" error (exit 3), with the reason the client saw (a broker's
    own answer before an older transport error): a refused login or an untrusted certificate
    is "cannot connect", anything else is the cluster not answering within the timeout."""
    err: Any = exc.args[0] if exc is not None and exc.args else None
    said = err.str() if hasattr(err, "code") and err.code() > 0 and not collector.fatal() else None
    reason = said or collector.explain() or (kafka_message(exc) if exc else None) or "no response"
    if collector.fatal():
        return ConnectionFailure(
            f"cannot connect to Kafka at {settings.bootstrap_servers}: {reason}")
    return ConnectionFailure(
        f"cannot reach Kafka at {settings.bootstrap_servers} within "
        f"{settings.timeout:g}s: {reason}")


class AdminSession:
    """An AdminClient plus the errors it saw, with every wait bounded by the timeout."""

    def __init__(self, settings: ConnectionSettings) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        self.settings = settings
        self.collector = ErrorCollector()
        self._polled_at = 0.0
        self.excused_until: Callable[[], float] = lambda: 0.0
        """The monotonic moment until which a missing leader or coordinator is a fault's
        doing, not an unreachable cluster (set by a run that injects faults)."""
        try:
            self.admin = AdminClient(admin_config(settings, self.collector))
        except (KafkaException, ValueError, TypeError) as exc:
            raise InputError(f"invalid client configuration: {kafka_message(exc)}") from None

    def unreachable(self, exc: BaseException | None = None) -> ConnectionFailure:
        """The one-line exit-3 error for a cluster we could not talk to."""
        self.admin.poll(0.2)  # serve pending error callbacks: they say why
        return unreachable(self.settings, self.collector, exc)

    def excuse(self, until: Callable[[], float]) -> None:
        """Add a reason to wait longer: ``until()`` is the monotonic moment until which a
        missing leader is explained (a fault in force, a topic just created)."""
        earlier = self.excused_until
        self.excused_until = lambda: max(earlier(), until())

    def gives_up(self, deadline: Deadline) -> bool:
        """Whether a wait bounded by ``deadline`` is over. A fault the run injected that is
        still in force, or healed only just, explains the wait: the deadline moves to the
        excuse's end plus one timeout, for a whole timeout of tries once the cluster is
        whole (each wait is bounded by the fault, its settling time and the timeout)."""
        if not deadline.expired():
            return False
        excused = self.excused_until()
        if excused > time.monotonic():
            deadline.at = excused + self.settings.timeout
            return False
        return True

    def outcome(self, future: Any, within: float) -> Any:
        """An admin future's result within ``within`` seconds, its KafkaException raised as
        is (for callers that read the error's name); a timeout is exit 3."""
        from concurrent.futures import TimeoutError as FutureTimeout

        deadline = Deadline(within)
        while True:
            # Short slices: a wrong password or an untrusted certificate ends the wait at
            # once instead of after the whole timeout.
            try:
                result = future.result(timeout=deadline.slice(0.25))
                # Hand queued librdkafka log lines to logging (-vv), ten times a second at
                # most: a poll per answer was a third of a second over 2,000 topics' configs.
                now = time.monotonic()
                if now - self._polled_at >= 0.1:
                    self._polled_at = now
                    self.admin.poll(0)
                return result
            except FutureTimeout:
                self.admin.poll(0)  # serve error callbacks: they tell a fatal error
                if self.collector.fatal() or self.gives_up(deadline):
                    raise self.unreachable() from None

    def wait(self, future: Any, within: float | None = None) -> Any:
        """:meth:`outcome` within the timeout (or ``within`` seconds), every failure exit 3."""
        from confluent_kafka import KafkaException

        try:
            return self.outcome(future, self.settings.timeout if within is None else within)
        except KafkaException as exc:
            raise self.unreachable(exc) from None

    def describe_identity(self) -> tuple[str | None, int | None, tuple[Broker, ...]]:
        """Cluster id, the controller clients are told about, and the brokers by id.

        librdkafka sends DescribeCluster to the broker its metadata names as controller;
        for a few seconds after a broker crashes, a KRaft cluster may still name that one,
        and the request would wait out the whole timeout. So each attempt is short, and a
        failed one refreshes the metadata (which then names a live broker) and asks again.
        """
        from confluent_kafka import KafkaException

        deadline = Deadline(self.settings.timeout)
        while True:
            left = deadline.left()
            attempt = max(0.5, min(3.0, left))
            try:
                # A second of grace lets librdkafka's own request timeout say why, but never
                # past the deadline: an unreachable cluster is exit 3 within --timeout.
                described = self.wait(self.admin.describe_cluster(request_timeout=attempt),
                                      within=max(0.0, min(attempt + 1, left)))
                break
            except ConnectionFailure:
                left = deadline.left()
                if self.collector.fatal() or left <= 0:
                    raise
                with contextlib.suppress(KafkaException):
                    self.admin.list_topics(timeout=min(attempt, left))
        controller = described.controller
        controller_id = controller.id if controller is not None and controller.id >= 0 else None
        brokers = tuple(sorted((Broker(id=n.id, host=n.host, port=n.port, rack=n.rack)
                                for n in described.nodes), key=lambda b: b.id))
        return described.cluster_id, controller_id, brokers

    def list_topics(self) -> Any:
        """Cluster metadata (all topics), bounded by the timeout."""
        from confluent_kafka import KafkaException

        try:
            return self.admin.list_topics(timeout=self.settings.timeout)
        except KafkaException as exc:
            raise self.unreachable(exc) from None

    def describe_acls(self, within: float) -> list[Any]:
        """Every ACL binding (DescribeAcls matching any), as confluent-kafka's AclBinding,
        within ``within`` seconds. Kafka's refusal is raised as its KafkaException
        (SECURITY_DISABLED: no authorizer; CLUSTER_AUTHORIZATION_FAILED: no DESCRIBE on the
        cluster); no answer in time is exit 3, as for any admin wait."""
        from confluent_kafka import admin as kafka

        any_filter: Any = kafka.AclBindingFilter  # typed str, but None matches any name
        match_any = any_filter(kafka.ResourceType.ANY, None, kafka.ResourcePatternType.ANY,
                               None, None, kafka.AclOperation.ANY, kafka.AclPermissionType.ANY)
        future = self.admin.describe_acls(match_any, request_timeout=max(1.0, within))
        return list(self.outcome(future, max(1.0, within) + 1))

    def broker_values(self, names: tuple[str, ...]) -> dict[str, str]:
        """Some settings of one broker, for checks made before a run: best effort, so a
        principal that may not describe broker configs gets {} rather than an error."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import ConfigResource, ResourceType

        # A few seconds at most: a broker still recovering from a restart must not hold up
        # the run for a check it can do without.
        within = min(self.settings.timeout, 5.0)
        try:
            brokers = self.list_topics().brokers
            resource = ConfigResource(ResourceType.BROKER, str(min(brokers)))
            future = self.admin.describe_configs([resource], request_timeout=within)[resource]
            configs = self.outcome(future, within + 1)
        except (KafkaException, ConnectionFailure, ValueError):
            return {}
        return {n: str(configs[n].value) for n in names
                if n in configs and configs[n].value is not None}

    def list_offsets(self, topic: str, partitions: list[int],
                     spec: Literal["earliest", "latest"] | int,
                     read_committed: bool = False) -> dict[int, int]:
        """Each partition's log start (``earliest``), end (``latest``: the high watermark,
        or the last stable offset for a read_committed reader), or first offset at or
        after a time (epoch ms; -1 where there is none), in one admin request: a
        consumer's own query would queue behind its pending fetch."""
        found = self.list_offsets_of([(topic, p) for p in partitions], spec, read_committed)
        return {p: offset for (_, p), offset in found.items()}

    def list_offsets_of(self, partitions: list[tuple[str, int]],
                        spec: Literal["earliest", "latest"] | int,
                        read_committed: bool = False,
                        failed: dict[tuple[str, int], str] | None = None,
                        deadline: Deadline | None = None) -> dict[tuple[str, int], int]:
        """:meth:`list_offsets` for partitions of any topics at once, by (topic, partition).

        A partition whose answer is an error is asked again (alone with the others that
        failed) until the deadline. Then, with ``failed``, its error goes there and the
        others are returned (a topic deleted meanwhile, a leader just lost); without it, the
        read fails as a whole (exit 3). ``deadline`` bounds it (a snapshot's reads share
        one); by default it is the timeout, 10 s at least."""
        from concurrent.futures import TimeoutError as FutureTimeout

        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        specs: Any = OffsetSpec  # untyped in confluent-kafka
        offset_spec = (specs.earliest() if spec == "earliest" else specs.latest()
                       if spec == "latest" else specs.for_timestamp(spec))
        level = (IsolationLevel.READ_COMMITTED if read_committed
                 else IsolationLevel.READ_UNCOMMITTED)
        deadline = deadline or Deadline(max(self.settings.timeout, 10))
        found: dict[tuple[str, int], int] = {}
        pending = list(dict.fromkeys(partitions))
        metadata: dict[str, Any] = {}  # the failed topics', asked after a failed try
        attempt = FIRST_ATTEMPT_S  # doubled at each try
        while pending:
            # A short first try; a leader that refuses connections is not asked (leaders.py).
            errors: dict[tuple[str, int], BaseException] = {
                key: LeaderGone(why) for key, why in refusing_leaders(metadata, pending).items()}
            asked = [key for key in pending if key not in errors]
            timeout = min(self.settings.timeout, max(0.5, deadline.left()), attempt)
            attempt *= 2 if asked else 1
            futures = self.admin.list_offsets(
                {TopicPartition(t, p): offset_spec for t, p in asked},
                isolation_level=level, request_timeout=timeout) if asked else {}
            for tp, future in futures.items():
                try:
                    # Python's wait outlasts librdkafka's: a slow answer is librdkafka's timeout.
                    offset = int(future.result(timeout=max(0.5, deadline.left()) + 1).offset)
                    if offset < 0 and spec in ("earliest", "latest"):
                        # A leader that died and is not yet fenced "answers" -1001
                        # (OFFSET_INVALID), which is no log position at all.
                        raise LeaderGone(f"no {spec} offset for {tp.topic}[{tp.partition}] "
                                         f"(answer {offset}): its leader is gone")
                    found[(tp.topic, tp.partition)] = offset
                except (KafkaException, FutureTimeout, LeaderGone) as exc:
                    errors[(tp.topic, tp.partition)] = exc
            pending = list(errors)
            if not pending:
                break
            # Right after a broker restart, leaders and their epochs can be briefly out of
            # step (UNKNOWN_LEADER_EPOCH, NOT_LEADER...; librdkafka does not flag these
            # retriable): ask again until the deadline. Bad credentials stay bad.
            if self.collector.fatal() or self.gives_up(deadline):
                if failed is None or self.collector.fatal():
                    raise self.unreachable(next(iter(errors.values()))) from None
                for key, error in errors.items():
                    failed[key] = kafka_message(error) or error.__class__.__name__
                break
            # Without fresh metadata librdkafka says "No leaders found", or after a leader
            # moved FENCED_LEADER_EPOCH (its cached epoch sent again), for as long as asked.
            metadata = metadata_of(self.admin, {t for t, _ in errors},
                                   min(self.settings.timeout, 5))
            time.sleep(0.3)
        return found

    def record_times(self, positions: dict[tuple[str, int], int],
                     within: float) -> dict[tuple[str, int], int | None]:
        """The timestamp (epoch ms) of the first record at or after each position, read
        uncommitted by an assigned consumer that never joins or commits to its group, one
        record per partition. A partition that ends at its position maps to None (nothing
        to time); one that gave no answer ``within`` seconds, or an error, is left out, so
        the caller can say it was not read. Records without a time (-1) map to None."""
        from confluent_kafka import KafkaError, TopicPartition

        if not positions:
            return {}
        consumer = new_consumer(self.settings, None, **{
            "group.id": "kaudit-check-peek", "enable.auto.commit": False,
            "isolation.level": "read_uncommitted", "enable.partition.eof": True,
            "fetch.max.bytes": 1 << 20, "max.partition.fetch.bytes": 1 << 16})
        found: dict[tuple[str, int], int | None] = {}
        try:
            consumer.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
            deadline = Deadline(within)
            while len(found) < len(positions) and not deadline.expired():
                for msg in consumer.consume(500, 0.2):
                    key = (msg.topic(), msg.partition())
                    error = msg.error()
                    if key in found or (error is not None
                                        and error.code() != KafkaError._PARTITION_EOF):
                        continue
                    # A position past the last record (e.g. on a transaction marker) has no
                    # record to time: the partition ends there.
                    stamp = int(msg.timestamp()[1]) if error is None else -1
                    found[key] = stamp if stamp >= 0 else None
                    consumer.pause([TopicPartition(*key)])
        finally:
            consumer.close()
        return found
