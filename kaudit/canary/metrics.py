"""The canary's Prometheus endpoint (``--metrics-port``), served by ``prometheus_client``.

The counters are read from the books at scrape time (one source of truth, no second tally
to drift): records by fate per topic and partition, lost records by cause. The latency
histograms are per topic only (a histogram per partition multiplies series for little).
Labels carry topic names, partition numbers, fates and causes: never a connection setting,
so never a secret.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from kaudit.canary.book import CAUSES, COUNTS
from kaudit.canary.state import CanaryState

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                   30.0, 60.0)


class BooksCollector(Collector):
    """Turns a canary's books and health into metric families, under its lock."""

    def __init__(self, canary: CanaryState, info: dict[str, str]) -> None:
        self.canary, self.info = canary, info

    def collect(self) -> Iterator[Any]:
        canary = self.canary
        topic = canary.settings.topic
        records = CounterMetricFamily("kaudit_canary_records", "Canary records by fate: "
                                      "sent, acked, failed, read, lost, duplicated...",
                                      labels=["topic", "partition", "fate"])
        lost = CounterMetricFamily("kaudit_canary_lost_records", "Lost records by cause.",
                                   labels=["topic", "partition", "cause"])
        leader = GaugeMetricFamily("kaudit_canary_partition_leader",
                                   "Broker leading each canary partition (-1: none).",
                                   labels=["topic", "partition"])
        unread = GaugeMetricFamily("kaudit_canary_acked_unread_records",
                                   "Acknowledged records not read back yet, nor declared "
                                   "lost.", labels=["topic", "partition"])
        isr = GaugeMetricFamily("kaudit_canary_partition_isr_size",
                                "In-sync replicas of each canary partition.",
                                labels=["topic", "partition"])
        now = time.monotonic()
        with canary.lock:
            for part, book in sorted(canary.books.items()):
                for fate in COUNTS:
                    records.add_metric([topic, str(part), fate], book.counts[fate])
                for cause in CAUSES:
                    lost.add_metric([topic, str(part), cause], book.lost_by_cause[cause])
                unread.add_metric([topic, str(part)], book.unsettled()["acked_unread"])
            health = canary.health
            for part, broker in sorted(health.leaders.items()):
                leader.add_metric([topic, str(part)], broker)
                isr.add_metric([topic, str(part)], health.isr_sizes.get(part, 0))
            unanswered = min((r.sent_at for b in canary.books.values() for r in b.open.values()
                              if r.outcome == "pending"), default=None)
        late = canary.settings.late_after_s
        yield records
        yield lost
        yield unread
        yield leader
        yield isr
        # Produce is available when acks keep coming and no send waits longer than
        # --late-after; consume when a canary record was read within --late-after.
        produce_ok = now - health.last_ack <= late and (unanswered is None
                                                        or now - unanswered <= late)
        yield _gauge("kaudit_canary_produce_available",
                     "1 while writes are acknowledged in time, else 0.", topic, produce_ok)
        yield _gauge("kaudit_canary_consume_available",
                     "1 while canary records are read back in time, else 0.", topic,
                     now - health.last_read <= late)
        yield _gauge("kaudit_canary_last_round_trip_timestamp_seconds",
                     "Wall-clock time of the last canary record read back.", topic,
                     health.last_read_wall)
        info = InfoMetricFamily("kaudit_canary_settings", "The canary's settings.")
        info.add_metric([], self.info)
        yield info


def _gauge(name: str, doc: str, topic: str, value: float) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, doc, labels=["topic"])
    gauge.add_metric([topic], float(value))
    return gauge


def serve(canary: CanaryState, address: str, port: int, info: dict[str, str]) -> Any:
    """Start the endpoint in a thread; returns the server (``shutdown()`` ends it)."""
    registry = CollectorRegistry()
    registry.register(BooksCollector(canary, info))
    ack = Histogram("kaudit_canary_ack_latency_seconds", "Send to acknowledgement.",
                    ["topic"], registry=registry, buckets=LATENCY_BUCKETS)
    e2e = Histogram("kaudit_canary_e2e_latency_seconds", "Send to read back.",
                    ["topic"], registry=registry, buckets=LATENCY_BUCKETS)
    canary.ack_latency = ack.labels(canary.settings.topic).observe
    canary.e2e_latency = e2e.labels(canary.settings.topic).observe
    server, _thread = start_http_server(port, addr=address, registry=registry)
    return server
