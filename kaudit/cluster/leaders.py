"""Whether a partition's leader, as the metadata names it, still listens: librdkafka's
ListOffsets to a leader that is down but not yet fenced (a killed broker, for up to
``broker.session.timeout.ms``) reconnects in a tight loop until the request times out,
about 0.8 of a core; :meth:`kaudit.cluster.client.AdminSession.list_offsets_of` asks only
partitions whose leader does not refuse connections."""

from __future__ import annotations

import contextlib
import socket
from typing import Any

FIRST_ATTEMPT_S = 2.0
"""The first ListOffsets try's request timeout; each retry's doubles (up to the timeout)."""


class LeaderGone(Exception):
    """A partition's leader answered no offset or refuses connections: dead, not fenced."""


def metadata_of(admin: Any, topics: set[str], timeout: float) -> dict[str, Any]:
    """Each topic's metadata (ClusterMetadata), asked anew: librdkafka's cache is not
    refreshed by its own ListOffsets errors. A topic whose ask fails is left out (the next
    try says what is wrong)."""
    found: dict[str, Any] = {}
    for topic in topics:
        with contextlib.suppress(Exception):
            found[topic] = admin.list_topics(topic=topic, timeout=timeout)
    return found


def refusing_leaders(metadata: dict[str, Any], pending: list[tuple[str, int]]
                     ) -> dict[tuple[str, int], str]:
    """Which of ``pending`` have a leader, by ``metadata`` (a ClusterMetadata per topic),
    that refuses TCP connections, each with why; a leader that accepts one, does not answer
    in time, or is unknown is left for librdkafka to ask."""
    refused: dict[int, bool] = {}  # by broker id: each is tried once
    gone: dict[tuple[str, int], str] = {}
    for topic, partition in pending:
        found = metadata.get(topic)
        if found is None:
            continue
        meta = found.topics.get(topic)
        leader = meta.partitions.get(partition) if meta is not None else None
        broker = found.brokers.get(leader.leader) if leader is not None else None
        if broker is None:
            continue
        if broker.id not in refused:
            try:
                socket.create_connection((broker.host, broker.port), timeout=0.5).close()
                refused[broker.id] = False
            except ConnectionRefusedError:
                refused[broker.id] = True
            except OSError:  # no answer in time, or no route: librdkafka says what it is
                refused[broker.id] = False
        if refused[broker.id]:
            gone[(topic, partition)] = (f"the leader of {topic}[{partition}], broker "
                                        f"{broker.id} at {broker.host}:{broker.port}, "
                                        "refuses connections")
    return gone
