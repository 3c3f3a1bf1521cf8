"""What a Kafka Connect sink connector's own records say, parsed (pure): its configuration
and tasks from the REST API, its dead letter queue's records by their context headers, and
its tasks' history in Connect's status topic."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kaudit.pipeline.causes import DeadLetter, Restart, TaskState

ERRORS = "__connect.errors."
"""The prefix of the context headers Connect adds to a dead-lettered record (with
``errors.deadletterqueue.context.headers.enable=true``)."""


@dataclass(frozen=True)
class SinkConnector:
    """A sink connector's settings that bear on what reached the sink, and its tasks."""

    name: str
    tolerates_errors: bool
    dead_letter_topic: str | None
    context_headers: bool
    settings: Mapping[str, str]
    """``insert.mode``, ``delete.enabled`` and ``transforms``, where set."""
    tasks: tuple[TaskState, ...]


def sink_connector(name: str, config: Mapping[str, Any], status: Mapping[str, Any]
                   ) -> SinkConnector:
    """The connector from ``GET /connectors/NAME/config`` and ``.../status``."""
    dlq = str(config.get("errors.deadletterqueue.topic.name") or "").strip() or None
    tasks = tuple(TaskState(int(t["id"]), str(t.get("state", "UNKNOWN")),
                            first_line(t.get("trace")))
                  for t in status.get("tasks") or [] if "id" in t)
    return SinkConnector(
        name=name,
        tolerates_errors=str(config.get("errors.tolerance", "none")).lower() == "all",
        dead_letter_topic=dlq,
        context_headers=str(config.get("errors.deadletterqueue.context.headers.enable",
                                       "false")).lower() == "true",
        settings={k: str(config[k]) for k in ("insert.mode", "delete.enabled", "transforms")
                  if k in config},
        tasks=tuple(sorted(tasks, key=lambda t: t.task)))


def first_line(trace: Any) -> str | None:
    """A Java trace's first non-empty line (the exception and its message)."""
    if not trace:
        return None
    return next((ln.strip() for ln in str(trace).splitlines() if ln.strip()), None)


def dead_letter(headers: Sequence[tuple[str, bytes | None]] | None, topic: str,
                connector: str) -> DeadLetter | None:
    """The source record a dead letter queue record stands for, from its context headers;
    None when they name another topic or connector, or are missing (a queue written
    without context headers cannot be matched to records)."""
    found = {name.removeprefix(ERRORS): (value or b"").decode("utf-8", "replace")
             for name, value in headers or () if name.startswith(ERRORS)}
    if found.get("topic") != topic or found.get("connector.name", connector) != connector:
        return None
    try:
        partition, offset = int(found["partition"]), int(found["offset"])
    except (KeyError, ValueError):
        return None
    return DeadLetter(partition, offset, found.get("exception.class.name") or "unknown",
                      found.get("exception.message") or None)


@dataclass(frozen=True)
class StatusRecord:
    """One record of Connect's status topic."""

    key: str
    value: bytes | None
    timestamp_ms: int
    offset: int


@dataclass(frozen=True)
class TaskHistory:
    """The restarts a connector's tasks went through, as far as the status topic tells."""

    restarts: tuple[Restart, ...]
    complete: bool
    """False where compaction has removed records (a gap in the offsets): earlier
    restarts may be gone."""


def task_history(records: Iterable[StatusRecord], connector: str) -> TaskHistory:
    """The restarts of ``connector``'s tasks in one partition of the status topic (a task's
    records all land in one): each RUNNING state that follows another state of the task,
    or a RUNNING of another generation (a task started again, e.g. after its worker
    died), in offset order."""
    prefix = f"status-task-{connector}-"
    last: dict[int, tuple[str, Any]] = {}
    restarts: list[Restart] = []
    complete, previous = True, None
    for record in records:
        if previous is not None and record.offset != previous + 1:
            complete = False
        previous = record.offset
        task = record.key.removeprefix(prefix)
        if task == record.key or not task.isdigit() or record.value is None:
            continue
        try:
            state = json.loads(record.value)
        except ValueError:
            continue
        now = (str(state.get("state")), state.get("generation"))
        before = last.get(int(task))
        if now[0] == "RUNNING" and before is not None and before != now:
            restarts.append(Restart(int(task), record.timestamp_ms))
        last[int(task)] = now
    return TaskHistory(tuple(restarts), complete)


def combined(histories: Iterable[TaskHistory]) -> TaskHistory:
    """The histories of the status topic's partitions as one, restarts in time order."""
    parts = list(histories)
    restarts = sorted((r for h in parts for r in h.restarts), key=lambda r: (r.at_ms, r.task))
    return TaskHistory(tuple(restarts), all(h.complete for h in parts))
