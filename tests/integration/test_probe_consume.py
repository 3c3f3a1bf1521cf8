"""`kaudit probe consume` against the real lab: each commit strategy under worker crashes
(and a killed group coordinator) delivers what it is documented to, every run.

The crashes land at each strategy's crash point (``--crash-point between``, the default)
while the input is still being written (``--rate``), so the outcome class is the same on
every run: before-process loses, after-process repeats, transactional and sink-offsets
neither. The four runs are the consumer half of ``kaudit probe prove``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab, interrupt_when, run_kaudit
from tests.integration.test_lab import admin
from tests.pg import Postgres

pytestmark = [pytest.mark.kafka, pytest.mark.probe]

#: The points each strategy's crashes land on (kaudit.probe.consume.worker.CRASH_POINTS).
POINTS = {"before-process": "after-commit-before-process",
          "after-process": "after-process-before-commit",
          "transactional": "after-send-offsets-before-commit",
          "sink-offsets": "after-write-before-commit"}


def consume(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    result = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--format", "json", *args,
                        timeout=600)
    doc = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.code, doc, result.stderr


def test_prove_shows_the_consumer_table_with_every_loss_and_repeat_attributed(
        lab: Lab) -> None:
    result = run_kaudit("probe", "prove", "--only", "consumer", "-b", lab.bootstrap,
                        "--lab-state-dir", lab.state_dir, "--format", "json", timeout=600)
    assert result.stdout, (result.code, result.stderr)  # an error, not a report
    doc = json.loads(result.stdout)
    unconfirmed = [(r["claim"], r["observed"]) for r in doc["rows"]
                   if r["verdict"] != "CONFIRMED"]
    assert result.code == 0 and not unconfirmed, (unconfirmed, result.stderr)
    assert len(doc["rows"]) == 4 and doc["verdict"] == "confirmed"
    runs = {name.removeprefix("consume-"): run for name, run in doc["runs"].items()}
    assert set(runs) == set(POINTS)
    for strategy, run in runs.items():
        assert run["finished"] and run["records"] == 2000, (strategy, run)
        assert run["crashes"], (strategy, run["events"])
        assert all(c["point"] == POINTS[strategy] for c in run["crashes"]), strategy
        # Every loss and every repeat is a crash's, none is left unexplained.
        assert run["unattributed"]["lost"] == run["unattributed"]["duplicated"] == 0
        assert sum(c["lost"] for c in run["crashes"]) == run["lost"], strategy
        # A record two crashes each made repeat is one duplicated record and two repeats:
        # the crashes explain the extra processings (equal to the records only when no
        # record was processed three times, which depends on timing).
        assert sum(c["duplicated"] for c in run["crashes"]) == run["extra_processings"], \
            strategy
    lose, repeat = runs["before-process"], runs["after-process"]
    assert lose["lost"] > 0 and lose["duplicated"] == 0
    assert all(c["lost"] > 0 for c in lose["crashes"])  # each crash had a batch in hand
    assert repeat["lost"] == 0 and repeat["duplicated"] > 0
    assert all(c["duplicated"] > 0 for c in repeat["crashes"])
    for strategy in ("transactional", "sink-offsets"):
        assert (runs[strategy]["lost"], runs[strategy]["duplicated"]) == (0, 0)
        assert runs[strategy]["processed"] == 2000


def test_transactional_is_exactly_once_under_crashes_and_a_killed_coordinator(
        lab: Lab, restore_brokers: None) -> None:
    # sink-offsets under a killed coordinator: the PostgreSQL test below. A worker fenced
    # (exit 3) or stuck in send_offsets_to_transaction (exit 4) while the coordinator
    # moves is restarted like a crashed one; neither may cost a record or repeat one.
    code, doc, stderr = consume(lab, "--commit", "transactional", "--expect", "exactly-once",
                                "--count", "2000", "--rate", "400", "--batch", "25",
                                "--crash-worker", "2s", "--max-crashes", "3",
                                "--fault", "kill-coordinator", "--fault-at", "30%",
                                "--fault-duration", "3", "--lab-state-dir", lab.state_dir)
    assert code == 0, stderr + json.dumps([doc.get("violations"), doc.get("events")])
    assert doc["schema"] == "kaudit.consume/v1" and doc["verdict"] == "pass"
    assert doc["finished"] and (doc["lost"], doc["duplicated"]) == (0, 0)
    assert doc["processed"] == doc["records"] == 2000 and doc["times"] == {"1": 2000}
    assert doc["crashes"] and all(c["lost"] == c["duplicated"] == 0 for c in doc["crashes"])
    kinds = [e["kind"] for e in doc["events"]]
    assert "fault" in kinds and "heal" in kinds
    assert doc["topics_deleted"]


def test_rebalances_keep_the_sinks_exactly_once(lab: Lab) -> None:
    # An extra (dynamic) worker joins and leaves every second while the input is written:
    # partitions move between members mid-batch; the sink's stored offsets keep even the
    # repeats out. 16 s of input: on a slow host (a CI run's, with 8 s) the extra worker
    # was given no partition before the input ran out, and so never left.
    code, doc, stderr = consume(lab, "--commit", "sink-offsets", "--expect", "exactly-once",
                                "--count", "4000", "--rate", "250", "--batch", "25",
                                "--rebalance", "1s")
    assert code == 0, stderr + json.dumps([doc.get("violations"), doc.get("events")])
    assert doc["finished"] and (doc["lost"], doc["duplicated"]) == (0, 0)
    assert doc["processed"] == 4000
    # The extra worker leaves only after it was given partitions and polled a batch: a
    # leave is a partition moved twice.
    details = [e["detail"] for e in doc["events"]]
    assert details.count("worker 2 leaves the group") >= 1, details
    assert details.count("worker 2 joins the group") >= 2, details


def test_ctrl_c_stops_the_workers_counts_what_they_were_given_and_cleans_up(
        lab: Lab, tmp_path: Path) -> None:
    sink = tmp_path / "sink.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", "probe", "consume", "-b", lab.bootstrap,
         "--commit", "sink-offsets", "--sink", f"sqlite:{sink}", "--count", "100000",
         "--rate", "500", "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stored() -> int:
        try:
            with sqlite3.connect(sink, timeout=5) as db:
                tables = [t for (t,) in db.execute(
                    "select name from sqlite_master where name like '%_processed'")]
                return sum(db.execute(f"select count(*) from {t}").fetchone()[0]
                           for t in tables)
        except sqlite3.Error:  # not created yet
            return 0

    doc = json.loads(interrupt_when(proc, lambda: stored() >= 300))
    assert doc["interrupted"] and not doc["finished"]
    # What no worker had been given is left out, not counted lost.
    assert 300 <= doc["records"] < 100000 and (doc["lost"], doc["duplicated"]) == (0, 0)
    assert any(n.startswith("interrupted: ") for n in doc["notes"]), doc["notes"]
    assert doc["topics_deleted"]
    with sqlite3.connect(sink) as db:  # the run's tables are dropped
        assert db.execute("select count(*) from sqlite_master where type = 'table' and "
                          "name like 'kaudit_consume_%'").fetchone()[0] == 0


def test_a_bad_fault_is_one_line_and_exit_2(lab: Lab) -> None:
    result = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--fault", "kill-everything")
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "kill-leader" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("session_ms", ["1000", "1800001"])
def test_a_session_timeout_the_brokers_refuse_is_exit_2_before_any_topic(
        lab: Lab, session_ms: str) -> None:
    # The workers' JoinGroup failed over and over, and the run stalled and reported every
    # record lost. The brokers' bounds are Kafka's defaults (6 s to 30 min) on the lab.
    before = set(admin(lab).list_topics(timeout=10).topics)
    result = run_kaudit("probe", "consume", "-b", lab.bootstrap, "--session-timeout-ms",
                        session_ms, "--count", "100")
    assert (result.code, result.stderr) == (2, (
        f"kaudit: error: --session-timeout-ms {session_ms} is outside what the brokers allow "
        "(group.min.session.timeout.ms 6000 to group.max.session.timeout.ms 1800000)\n"))
    assert set(admin(lab).list_topics(timeout=10).topics) == before


@pytest.mark.parametrize("case", ["a_batch_and_its_offsets_commit_together",
                                  "a_failure_before_commit_rolls_the_batch_back",
                                  "sigkill_between_the_writes_and_commit_leaves_nothing"])
def test_the_sink_cases_hold_on_postgresql(postgres: Postgres, case: str) -> None:
    from kaudit.probe.consume.sink import parse_sink
    from tests.unit.probe import test_consume_sink

    run = f"t{abs(hash(case)) % 10**8}"
    getattr(test_consume_sink, case)(parse_sink(_uri(postgres), run))
    postgres.psql(f"drop table if exists kaudit_consume_{run}_processed, "
                  f"kaudit_consume_{run}_offsets")


def test_sink_offsets_on_postgresql_is_exactly_once_under_crashes_and_a_killed_coordinator(
        lab: Lab, restore_brokers: None, postgres: Postgres) -> None:
    before = postgres.psql("select count(*) from pg_tables where tablename like 'kaudit_%'")
    code, doc, stderr = consume(lab, "--commit", "sink-offsets", "--sink", _uri(postgres),
                                "--expect", "exactly-once", "--count", "2000", "--rate", "400",
                                "--batch", "25", "--crash-worker", "1s", "--max-crashes", "3",
                                "--fault", "kill-coordinator", "--fault-at", "30%",
                                "--fault-duration", "3", "--lab-state-dir", lab.state_dir)
    assert code == 0, stderr + json.dumps([doc.get("violations"), doc.get("events")])
    assert (doc["lost"], doc["duplicated"], doc["processed"]) == (0, 0, 2000)
    assert doc["crashes"] and all(c["point"] == "after-write-before-commit"
                                  for c in doc["crashes"])
    kinds = [e["kind"] for e in doc["events"]]
    assert "fault" in kinds and "heal" in kinds
    assert postgres.password not in json.dumps(doc) + stderr
    assert doc["sink"].startswith("postgresql://postgres:*****@127.0.0.1:")
    # The run's tables are dropped at the end.
    assert postgres.psql("select count(*) from pg_tables where tablename like "
                         "'kaudit_%'") == before


def _uri(postgres: Postgres) -> str:
    return (f"postgresql://{postgres.user}:{postgres.password}@127.0.0.1:{postgres.port}/"
            f"{postgres.database}")
