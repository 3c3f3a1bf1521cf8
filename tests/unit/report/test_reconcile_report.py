"""The reconcile report says what each column was compared as, and where two texts that
look alike differ."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from kaudit.reconcile.avro_schemas import given_schemas
from kaudit.reconcile.formats.avro import pinned_to_sampled_id
from kaudit.reconcile.request import FieldTypes, ReconcileRequest, ReconcileResult
from kaudit.reconcile.sinks import SinkSpec
from kaudit.reconcile.source import OffsetRange
from kaudit.report.base import render
from kaudit.report.reconcile import RECONCILE


def result() -> ReconcileResult:
    return ReconcileResult(
        request=ReconcileRequest(topic="orders", sink_uri="parquet:/lake/orders", key="id",
                                 compare=("amount", "street")),
        sink=SinkSpec("parquet", "/lake/orders"), ranges=[OffsetRange(0, 0, 10, 0, 0)],
        topic_records=10, sink_rows=10, counts={"mismatched": 1}, by_partition={},
        samples={"mismatched": [{
            "key": "7", "partition": 0, "offset": 7, "column": "street",
            "topic_value": "Main\u00a0St", "sink_value": "Main St",
            "difference": "character 5: topic U+00A0 NO-BREAK SPACE, sink U+0020 SPACE"}]},
        output_files=[], seconds=1.0,
        fields=[FieldTypes("amount", "decimal(38,18)", "decimal(12,2)", "decimal(38,18)"),
                FieldTypes("street", "string", "string", "text"),
                FieldTypes("opens", "string", "string", "text",
                           "io.debezium.time.ZonedTime: a time of day with an offset: no sink "
                           "type holds one alike; compared as the sink column's type")])


def test_json_lists_each_columns_types_and_the_samples_difference() -> None:
    doc = json.loads(render(RECONCILE, result(), "json"))
    assert doc["fields"] == [
        {"column": "amount", "topic_type": "decimal(38,18)", "sink_type": "decimal(12,2)",
         "compared_as": "decimal(38,18)", "note": None},
        {"column": "street", "topic_type": "string", "sink_type": "string",
         "compared_as": "text", "note": None},
        {"column": "opens", "topic_type": "string", "sink_type": "string",
         "compared_as": "text", "note": "io.debezium.time.ZonedTime: a time of day with an "
         "offset: no sink type holds one alike; compared as the sink column's type"}]
    assert doc["samples"]["mismatched"][0]["difference"].startswith("character 5: ")


def test_the_table_has_a_line_per_column_and_one_per_look_alike() -> None:
    text = render(RECONCILE, result(), "table")
    assert "amount: topic decimal(38,18), sink decimal(12,2), compared as decimal(38,18)\n" \
        in text
    assert ("opens: topic string, sink string, compared as text (io.debezium.time.ZonedTime: "
            "a time of day with an offset") in text
    assert ("key 7, street: the values look alike and differ at character 5: topic U+00A0 "
            "NO-BREAK SPACE, sink U+0020 SPACE") in text


def avro_result(tmp_path: Path, ids: set[int]) -> ReconcileResult:
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    (tmp_path / "order.avsc").write_text(json.dumps(schema))
    avro = given_schemas("value", "avro", tmp_path / "order.avsc", None, None)
    assert avro is not None
    request = replace(result().request, value_format="avro",
                      avro=pinned_to_sampled_id(avro, ids, sampled=10))
    return replace(result(), request=request)


def test_the_id_a_single_schema_file_was_used_for_is_named(tmp_path: Path) -> None:
    doc = json.loads(render(RECONCILE, avro_result(tmp_path, {42}), "json"))
    assert doc["source"]["value_schemas"] == {
        "writers": [{"schema_id": 42, "source": str(tmp_path / "order.avsc")}],
        "reader": str(tmp_path / "order.avsc"), "id_from_topic": True}
    text = render(RECONCILE, avro_result(tmp_path, {42}), "table")
    assert (f"value schema: {tmp_path / 'order.avsc'}, used for schema id 42 (the ids "
            "sampled from both ends of each partition)") in text


def test_a_json_value_names_no_schemas() -> None:
    doc = json.loads(render(RECONCILE, result(), "json"))
    assert "value_schemas" not in doc["source"]
    assert "value schema" not in render(RECONCILE, result(), "table")


def explained_result() -> ReconcileResult:
    from kaudit.pipeline.causes import Explanation, PipelineEvidence, TaskState

    cause = {"name": "not_yet_delivered", "evidence": "at or past the committed offset 8 of "
             "partition 0 (lag 2); task 0 FAILED: java.sql.BatchUpdateException: refused",
             "committed": 8, "lag": 2}
    evidence = PipelineEvidence(committed={0: 8}, end_offsets={0: 10},
                                tasks=(TaskState(0, "FAILED", "java.sql.Batch"),),
                                dead_letter_topic="orders-dlq", dead_letters={},
                                restarts=None, unread={"status topic": "no topic st"})
    return replace(result(), counts={"missing_in_sink": 2}, samples={"missing_in_sink": [
        {"key": "8", "partition": 0, "offset": 8, "cause": cause},
        {"key": "9", "partition": 0, "offset": 9, "cause": cause}]},
        explanation=Explanation(
            source={"connector": "orders-sink", "connect_url": "http://connect:8083",
                    "sink_group": "connect-orders-sink", "status_topic": "st"},
            evidence=evidence, causes={"missing_in_sink": {"not_yet_delivered": 2}},
            classified=2, discrepancies=2, bound_s=30.0))


def test_causes_and_what_was_read_of_the_pipeline_in_json_table_and_html() -> None:
    doc = json.loads(render(RECONCILE, explained_result(), "json"))
    assert doc["causes"] == {"missing_in_sink": {"not_yet_delivered": 2}}
    pipe = doc["pipeline"]
    assert (pipe["committed_offsets"], pipe["dead_letters"], pipe["restarts"],
            pipe["unread"]) == ({"0": 8}, 0, None, {"status topic": "no topic st"})
    assert pipe["tasks"] == [{"task": 0, "state": "FAILED", "trace": "java.sql.Batch"}]
    text = render(RECONCILE, explained_result(), "table")
    assert "causes, from connector orders-sink at http://connect:8083 (group " \
           "connect-orders-sink; read within 30s):" in text
    assert "status topic unread: no topic st" in text
    assert "key 8 at 0:8: not_yet_delivered: at or past the committed offset 8" in text
    page = render(RECONCILE, explained_result(), "html")
    assert "Causes" in page and "java.sql.BatchUpdateException: refused" in page


def test_without_a_pipeline_causes_and_pipeline_are_null() -> None:
    doc = json.loads(render(RECONCILE, result(), "json"))
    assert (doc["causes"], doc["pipeline"]) == (None, None)
    assert "causes, from" not in render(RECONCILE, result(), "table")
