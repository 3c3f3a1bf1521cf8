"""A sink connector's REST answers, dead letter queue headers and status topic, parsed."""

from __future__ import annotations

import json

from kaudit.pipeline.causes import DeadLetter, Restart, TaskState
from kaudit.pipeline.connect import (
    StatusRecord,
    TaskHistory,
    combined,
    dead_letter,
    sink_connector,
    task_history,
)

TRACE = ("org.apache.kafka.connect.errors.ConnectException: Exiting WorkerSinkTask\n"
         "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(...)\n")


def test_the_connectors_settings_and_tasks_from_its_config_and_status() -> None:
    config = {"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
              "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "orders-dlq",
              "errors.deadletterqueue.context.headers.enable": "true",
              "insert.mode": "upsert", "delete.enabled": "true", "connection.password": "pw"}
    status = {"name": "sink", "connector": {"state": "RUNNING"},
              "tasks": [{"id": 1, "state": "RUNNING", "worker_id": "w"},
                        {"id": 0, "state": "FAILED", "trace": TRACE}]}
    connector = sink_connector("sink", config, status)
    assert connector.tolerates_errors and connector.context_headers
    assert connector.dead_letter_topic == "orders-dlq"
    assert connector.settings == {"insert.mode": "upsert", "delete.enabled": "true"}
    assert connector.tasks == (
        TaskState(0, "FAILED", "org.apache.kafka.connect.errors.ConnectException: Exiting "
                               "WorkerSinkTask"),
        TaskState(1, "RUNNING"))


def test_defaults_tolerate_nothing_and_have_no_queue() -> None:
    connector = sink_connector("s", {"errors.deadletterqueue.topic.name": " "}, {})
    assert (connector.tolerates_errors, connector.dead_letter_topic,
            connector.context_headers, connector.tasks) == (False, None, False, ())


def headers(**values: str) -> list[tuple[str, bytes | None]]:
    return [(f"__connect.errors.{k.replace('_', '.')}", v.encode()) for k, v in values.items()]


def test_a_dead_lettered_record_is_matched_by_its_context_headers() -> None:
    found = headers(topic="orders", partition="2", offset="41", connector_name="sink",
                    exception_class_name="org.apache.kafka.connect.errors.DataException",
                    exception_message="Converting byte[] to Kafka Connect data failed")
    assert dead_letter([("other", b"x"), *found], "orders", "sink") == DeadLetter(
        2, 41, "org.apache.kafka.connect.errors.DataException",
        "Converting byte[] to Kafka Connect data failed")


def test_a_dead_letter_of_another_topic_connector_or_without_headers_matches_nothing() -> None:
    base = {"topic": "orders", "partition": "0", "offset": "1", "connector_name": "sink"}
    assert dead_letter(headers(**(base | {"topic": "payments"})), "orders", "sink") is None
    assert dead_letter(headers(**(base | {"connector_name": "other"})), "orders", "sink") is None
    assert dead_letter(headers(**(base | {"offset": "x"})), "orders", "sink") is None
    assert dead_letter(None, "orders", "sink") is None
    plain = dead_letter(headers(**base), "orders", "sink")
    assert plain == DeadLetter(0, 1, "unknown", None)


def status(offset: int, key: str, state: str | None, generation: int = 1,
           at: int = 0) -> StatusRecord:
    value = None if state is None else json.dumps(
        {"state": state, "trace": None, "worker_id": "w", "generation": generation}).encode()
    return StatusRecord(key, value, at or offset * 100, offset)


def test_a_task_running_again_after_another_state_or_generation_is_a_restart() -> None:
    key = "status-task-orders-sink-0"
    records = [status(0, key, "RUNNING", 1), status(1, "status-connector-orders-sink",
                                                    "RUNNING", 1),
               status(2, key, "UNASSIGNED", 1), status(3, key, "RUNNING", 2),
               status(4, key, "RUNNING", 2),  # the same task said again: no restart
               status(5, key, "RUNNING", 3),  # a worker died, another took it
               status(6, "status-task-orders-sink-other-0", "UNASSIGNED"),
               status(7, "status-task-orders-sink-1", None)]
    history = task_history(records, "orders-sink")
    assert history == TaskHistory((Restart(0, 300), Restart(0, 500)), complete=True)


def test_a_gap_in_the_offsets_says_the_history_may_be_incomplete() -> None:
    key = "status-task-s-0"
    history = task_history([status(3, key, "FAILED"), status(9, key, "RUNNING", 2)], "s")
    assert history == TaskHistory((Restart(0, 900),), complete=False)
    both = combined([history, TaskHistory((Restart(1, 100),), True)])
    assert both == TaskHistory((Restart(1, 100), Restart(0, 900)), complete=False)
