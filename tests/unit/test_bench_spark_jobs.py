"""bench/reconcile's per-job figures, read from a Spark event log: a stage that two jobs wait
on ran once and is counted once; the time in jobs counts overlapping jobs once."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench() -> Any:
    sys.path.insert(0, str(BENCH))  # the script imports its sibling _common
    try:
        loader = SourceFileLoader("bench_reconcile", str(BENCH / "reconcile"))
        spec = importlib.util.spec_from_loader("bench_reconcile", loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_reconcile"] = module  # its dataclasses look themselves up there
        loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def _stage(stage: int, run_ms: int, records: int) -> dict[str, Any]:
    return {"Event": "SparkListenerStageCompleted", "Stage Info": {
        "Stage ID": stage, "Number of Tasks": 4, "Submission Time": 0, "Completion Time": 1,
        "Accumulables": [
            {"Name": "internal.metrics.executorRunTime", "Value": run_ms},
            {"Name": "internal.metrics.input.recordsRead", "Value": records}]}}


def test_a_stage_two_jobs_wait_on_is_counted_once(tmp_path: Path) -> None:
    events = [
        {"Event": "SparkListenerApplicationStart", "Timestamp": 500},
        # Jobs 1 and 2 both list the map stage 1 (adaptive execution); stage 3 is job 2's.
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 1000,
         "Stage IDs": [1, 2]},
        {"Event": "SparkListenerJobStart", "Job ID": 2, "Submission Time": 1100,
         "Stage IDs": [1, 3]},
        _stage(1, 20_000, 2_000_000),
        _stage(2, 1_000, 0),
        _stage(3, 500, 0),
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 9000,
         "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "SparkListenerJobEnd", "Job ID": 2, "Completion Time": 9100,
         "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "SparkListenerJobStart", "Job ID": 3, "Submission Time": 10_000,
         "Stage IDs": [4]},
        {"Event": "SparkListenerJobEnd", "Job ID": 3, "Completion Time": 10_500,
         "Job Result": {"Result": "JobSucceeded"}},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 11_000},
    ]
    log = tmp_path / "app-1"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))

    found = _bench().spark_jobs(tmp_path)

    jobs = {j["job"]: j for j in found["jobs"]}
    assert (jobs[1]["input_records"], jobs[1]["stages_run"], jobs[1]["task_run_s"]) == \
        (2_000_000, 2, 21.0)
    assert (jobs[2]["input_records"], jobs[2]["stages_run"], jobs[2]["task_run_s"]) == \
        (0, 1, 0.5)
    assert jobs[3]["stages_run"] == 0  # its stage was skipped: never completed
    # 1.0-9.1 s and 10.0-10.5 s: 8.6 s, not 8.0 + 8.0 + 0.5.
    assert found["jobs_seconds"] == 8.6
    assert found["app_seconds"] == 10.5


def test_each_executors_peak_memory_is_its_highest_over_the_stages(tmp_path: Path) -> None:
    mib = 2**20

    def peak(executor: str, stage: int, heap: int, rss: int) -> dict[str, Any]:
        return {"Event": "SparkListenerStageExecutorMetrics", "Executor ID": executor,
                "Stage ID": stage, "Stage Attempt ID": 0, "Executor Metrics": {
                    "JVMHeapMemory": heap * mib, "JVMOffHeapMemory": 10 * mib,
                    "ProcessTreeJVMRSSMemory": rss * mib}}

    events = [peak("driver", 1, 300, 900), peak("1", 1, 500, 800),
              peak("driver", 2, 200, 950), peak("1", 2, 700, 750)]
    (tmp_path / "app-2").write_text("".join(json.dumps(e) + "\n" for e in events))

    found = _bench().spark_jobs(tmp_path)["peak_memory_mib"]

    assert found == {
        "1": {"heap": 700.0, "off_heap": 10.0, "rss": 800.0, "python_rss": 0.0},
        "driver": {"heap": 300.0, "off_heap": 10.0, "rss": 950.0, "python_rss": 0.0}}
