"""The consumer worker's guards around librdkafka: what counts as a fatal error, and the
watchdog that ends a worker stuck in a client call past its own timeout."""

from __future__ import annotations

import subprocess
import sys

from confluent_kafka import KafkaError

from kaudit.cluster.client import ErrorCollector, is_fatal
from kaudit.probe.consume.worker import EXIT_STUCK, Watchdog


def test_a_fatal_error_handed_to_consume_counts_although_its_flag_is_not_set() -> None:
    # What consume() returned when a static member was fenced (seen against the lab).
    fenced = KafkaError(KafkaError._FATAL, "Static consumer fenced")
    assert not fenced.fatal() and is_fatal(fenced)
    assert is_fatal(KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, fatal=True))
    assert not is_fatal(KafkaError(KafkaError._TRANSPORT))
    collector = ErrorCollector()
    collector(KafkaError(KafkaError._TRANSPORT))
    assert collector.first_fatal() is None
    collector(fenced)
    assert collector.first_fatal() is fenced


def test_the_watchdog_passes_the_timeout_and_the_answer_through() -> None:
    seen: list[object] = []

    def call(a: int, timeout: float) -> str:
        seen.append((a, timeout))
        return "done"

    assert Watchdog("worker 0.0").call("send_offsets", 1.5, call, 7) == "done"
    assert seen == [(7, 1.5)]


def test_a_call_stuck_past_its_timeout_ends_the_worker_with_its_own_exit_code() -> None:
    # In a child process: the watchdog ends the process it runs in.
    code = ("import time\n"
            "import kaudit.probe.consume.worker as w\n"
            "w.GRACE_S = 0.2\n"
            "w.Watchdog('worker 1.2').call('send_offsets_to_transaction', 0.1,\n"
            "                              lambda timeout: time.sleep(60))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == EXIT_STUCK
    first = done.stderr.splitlines()[0]
    assert first == ("worker 1.2: send_offsets_to_transaction did not return within 0.2 s "
                     "of its 0.1 s timeout; exiting to be restarted")
    assert "time.sleep" not in first and "in <lambda>" in done.stderr  # the stack follows
