"""Open librdkafka clients from :class:`ConnectionSettings`, with bounded waits.

Every error librdkafka reports while we talk to the cluster is collected, so
that when a call times out we can say *why* (refused, authentication, TLS)
in one line instead of a bare timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from kaudit.cluster.model import Broker
from kaudit.connect.settings import ConnectionSettings
from kaudit.errors import ConnectionFailure, InputError

rdkafka_log = logging.getLogger("kaudit.librdkafka")


class ErrorCollector:
    """Receives librdkafka's asynchronous errors (``error_cb``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.errors: list[Any] = []

    def __call__(self, err: Any) -> None:
        with self._lock:
            self.errors.append(err)

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
        if not errors:
            return None
        auth = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED}
        for err in errors:
            if err.code() in auth:
                return f"authentication failed: {err.str()}"
        for err in errors:
            if err.code() == KafkaError._SSL:
                return f"TLS handshake failed: {err.str()}"
        transport = [e for e in errors if e.code() == KafkaError._TRANSPORT]
        return str((transport or errors)[-1].str())


def client_config(
    settings: ConnectionSettings, collector: ErrorCollector | None = None, **extra: Any
) -> dict[str, Any]:
    """The librdkafka configuration for ``settings`` plus ``extra`` keys."""
    conf: dict[str, Any] = {
        "bootstrap.servers": settings.bootstrap_servers,
        # librdkafka logs to stderr by default; route it through logging so it
        # is silent unless -vv, and redacted like everything else.
        "logger": rdkafka_log,
        "socket.connection.setup.timeout.ms": int(min(settings.timeout, 30) * 1000),
    }
    conf.update(settings.properties)
    if collector is not None:
        conf["error_cb"] = collector
    conf.update(extra)
    return conf


def kafka_message(exc: BaseException) -> str:
    """The text of a KafkaException (or any exception) without its repr noise."""
    arg = exc.args[0] if exc.args else exc
    text = arg.str() if hasattr(arg, "str") else str(arg)
    return str(text)


class AdminSession:
    """An AdminClient plus the errors it saw, with every wait bounded by the timeout."""

    def __init__(self, settings: ConnectionSettings) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        self.settings = settings
        self.collector = ErrorCollector()
        try:
            self.admin = AdminClient(client_config(settings, self.collector))
        except (KafkaException, ValueError, TypeError) as exc:
            raise InputError(f"invalid client configuration: {kafka_message(exc)}") from None

    def unreachable(self, exc: BaseException | None = None) -> ConnectionFailure:
        """The one-line exit-3 error for a cluster we could not talk to."""
        self.admin.poll(0.2)  # serve pending error callbacks: they say why
        reason = self.collector.explain() or (kafka_message(exc) if exc else None) or "no response"
        if self.collector.fatal():
            return ConnectionFailure(
                f"cannot connect to Kafka at {self.settings.bootstrap_servers}: {reason}")
        return ConnectionFailure(
            f"cannot reach Kafka at {self.settings.bootstrap_servers} within "
            f"{self.settings.timeout:g}s: {reason}"
        )

    def wait(self, future: Any) -> Any:
        """Wait for an admin future within the timeout, mapping failures to exit 3."""
        from concurrent.futures import TimeoutError as FutureTimeout

        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self.settings.timeout
        while True:
            # Short slices: a wrong password or an untrusted certificate ends the wait at
            # once instead of after the whole timeout.
            try:
                result = future.result(timeout=max(0.0, min(0.25, deadline - time.monotonic())))
                self.admin.poll(0)  # hand queued librdkafka log lines to logging (-vv)
                return result
            except FutureTimeout:
                self.admin.poll(0)
                if self.collector.fatal() or time.monotonic() >= deadline:
                    raise self.unreachable() from None
            except KafkaException as exc:
                raise self.unreachable(exc) from None

    def describe_identity(self) -> tuple[str | None, int | None, tuple[Broker, ...]]:
        """Cluster id, the controller clients are told about, and the brokers by id."""
        described = self.wait(self.admin.describe_cluster(request_timeout=self.settings.timeout))
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
