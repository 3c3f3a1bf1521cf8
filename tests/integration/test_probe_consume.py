"""`kaudit probe consume` against the real lab: each commit strategy under worker crashes
(and a killed group coordinator) delivers what it is documented to, every run.

The crashes land at each strategy's crash point (``--crash-point between``, the default),
so the outcome class is the same on every run: before-process loses, after-process repeats,
transactional and sink-offsets neither. The consumer half of ``kaudit probe prove`` runs the
same four schedules (test_probe.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Lab, run_kaudit

pytestmark = pytest.mark.kafka

#: Long enough for three crashes to land on batches, short enough for CI.
RUN = ("--count", "3000", "--batch", "25", "--process-ms", "20", "--workers", "2",
       "--crash-worker", "1s", "--max-crashes", "3")


def consume(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    result = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--format", "json", *args,
                        timeout=600)
    doc = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.code, doc, result.stderr


def _landed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    assert doc["crashes"], ("no crash landed on a batch", doc["events"])
    return list(doc["crashes"])


def test_commit_before_processing_loses_and_names_the_crash(lab: Lab) -> None:
    code, doc, stderr = consume(lab, "--commit", "before-process", *RUN)
    assert code == 1, stderr  # lost records: the default expectation (no loss) fails
    assert doc["schema"] == "kaudit.consume/v1" and doc["finished"], doc["notes"]
    assert doc["records"] == 3000 and doc["lost"] > 0 and doc["duplicated"] == 0
    assert doc["delivered"] == "at-most-once" and doc["promised"] == "at-most-once"
    crashes = _landed(doc)
    assert all(c["point"] == "after-commit-before-process" for c in crashes)
    # Every lost record is a crash's: it had the record in hand, committed, never processed.
    assert sum(c["lost"] for c in crashes) == doc["lost"] and doc["unattributed"]["lost"] == 0
    assert all(c["lost"] > 0 for c in crashes)
    assert any("lost:" in v for v in doc["violations"])


def test_processing_before_commit_repeats_and_names_the_crash(lab: Lab) -> None:
    code, doc, stderr = consume(lab, "--commit", "after-process", "--expect", "at-least-once",
                                *RUN)
    assert code == 0, stderr + json.dumps(doc.get("violations"))
    assert doc["finished"] and doc["lost"] == 0 and doc["duplicated"] > 0
    crashes = _landed(doc)
    assert all(c["point"] == "after-process-before-commit" for c in crashes)
    assert sum(c["duplicated"] for c in crashes) == doc["duplicated"]
    assert doc["unattributed"]["duplicated"] == 0
    assert doc["times"].get("0", 0) == 0 and doc["extra_processings"] >= doc["duplicated"]


def test_exactly_once_fails_a_run_that_repeats(lab: Lab) -> None:
    code, doc, _ = consume(lab, "--commit", "after-process", "--expect", "exactly-once",
                           "--count", "600", "--batch", "25", "--crash-worker", "500ms",
                           "--max-crashes", "1", "--process-ms", "50")
    assert code == 1 and doc["verdict"] == "fail" and doc["duplicated"] > 0


@pytest.mark.parametrize("commit", ["transactional", "sink-offsets"])
def test_exactly_once_strategies_under_crashes_and_a_killed_coordinator(
        lab: Lab, restore_brokers: None, commit: str) -> None:
    code, doc, stderr = consume(lab, "--commit", commit, "--expect", "exactly-once", *RUN,
                                "--fault", "kill-coordinator", "--fault-at", "30%",
                                "--fault-duration", "3", "--lab-state-dir", lab.state_dir)
    assert code == 0, stderr + json.dumps([doc.get("violations"), doc.get("events")])
    assert doc["finished"] and (doc["lost"], doc["duplicated"]) == (0, 0)
    assert doc["processed"] == doc["records"] == 3000
    assert _landed(doc) and all(c["lost"] == c["duplicated"] == 0 for c in doc["crashes"])
    kinds = [e["kind"] for e in doc["events"]]
    assert "fault" in kinds and "heal" in kinds
    assert doc["topics_deleted"]


def test_a_bad_fault_is_one_line_and_exit_2(lab: Lab) -> None:
    result = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--fault", "kill-everything")
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "kill-leader" in result.stderr and len(result.stderr.strip().splitlines()) == 1
