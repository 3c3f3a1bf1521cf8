"""Where the group (or the sink) has committed each input partition to, asked in the
background: the question can wait out a moving coordinator for the whole timeout, and the
runner must go on restarting crashed workers meanwhile."""

from __future__ import annotations

import threading
from typing import Any

from kaudit.cluster import client
from kaudit.cluster.client import new_consumer
from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.consume.sink import SinkTarget, stored_offsets

ASK_EVERY_S = 0.5
"""How often the group's (or the sink's) committed offsets are asked for."""


class CommittedOffsets:
    """The latest committed offset of each input partition, asked every
    :data:`ASK_EVERY_S` in a thread of its own."""

    def __init__(self, conn: ConnectionSettings, topic: str, group: str,
                 sink: SinkTarget | None, partitions: list[int]) -> None:
        self.conn, self.topic, self.sink, self.partitions = conn, topic, sink, partitions
        self.consumer: Any = None
        if sink is None:
            # Never subscribes: it only asks the coordinator for the group's offsets.
            self.consumer = new_consumer(conn, None, **{"group.id": group,
                                                        "enable.auto.commit": False})
        self._latest: dict[int, int] | None = None
        self._failed: BaseException | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def latest(self) -> dict[int, int] | None:
        """The latest answer (None until the first); what failed the question is raised
        here, in the runner's thread."""
        with self._lock:
            if self._failed is not None:
                raise self._failed
            return self._latest

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                seen = self._ask()
            except Exception as exc:  # e.g. the sink's database went away
                with self._lock:
                    self._failed = exc
                return
            if seen is not None:
                with self._lock:
                    self._latest = seen
            self._stop.wait(ASK_EVERY_S)

    def _ask(self) -> dict[int, int] | None:
        if self.sink is not None:
            return stored_offsets(self.sink)
        try:
            found = self.consumer.committed(
                [client.TopicPartition(self.topic, p) for p in self.partitions],
                timeout=self.conn.timeout)
        except client.KafkaException:
            return None  # the coordinator is moving (a fault): ask again later
        return {tp.partition: tp.offset for tp in found if tp.error is None}

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.consumer is not None:
            self.consumer.close()
