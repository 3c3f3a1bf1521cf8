"""`kaudit reconcile` on topics whose values evolve: no discrepancy is invented, none hidden.

The first thousands of values carry whole amounts and no `note`; later ones carry decimals,
a `note` and a nested `customer.id`. No --schema is given: a schema guessed from the first
records would read every later value as null.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_lab import admin, wait_until
from tests.integration.test_reconcile import reconcile

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.usefixtures("local_spark")]

WHOLE = 3000
"""Records 0..WHOLE-1 have whole amounts and no note."""
DECIMAL = range(WHOLE, WHOLE + 1000)
"""Then records with decimal amounts, a note and a nested customer id."""
NOT_A_NUMBER = 9000
"""A record whose amount is text where the sink has a number."""
POISON = ["not json", "{broken", "42"]
BAD_KEY = json.dumps({"id": "one", "amount": 1})
"""A key that is text where the sink's key column is a number."""
STALE = set(range(WHOLE, WHOLE + 7))
COMPARE = ("--key", "id", "--compare", "amount,note,customer.id")


def produce(lab: Lab, name: str, values: list[str | None], keys: list[str]) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    admin(lab).create_topics([NewTopic(name, 2, 3)])[name].result(30)
    wait_until(lambda: name in admin(lab).list_topics(timeout=5).topics, 30, "topic")
    producer = Producer({"bootstrap.servers": lab.bootstrap, "enable.idempotence": True})
    for key, value in zip(keys, values, strict=True):
        producer.produce(name, key=key, value=value)
        producer.poll(0)
    assert producer.flush(60) == 0, "records still unsent after 60 s"


def whole(i: int) -> str:
    return json.dumps({"id": i, "amount": i})


def evolved(i: int) -> str:
    return json.dumps({"id": i, "amount": i + 0.5, "note": f"n{i}", "customer": {"id": i % 7}})


def sink_row(i: int, amount: float, late: bool) -> str:
    return json.dumps({"id": i, "amount": float(amount), "note": f"n{i}" if late else None,
                       "customer_id": i % 7 if late else None}) + "\n"


@pytest.fixture(scope="module")
def topics(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("evolving")
    # Append: every key once; the decimal records come after the first thousands.
    append = f"evolving-append-{uuid.uuid4().hex[:6]}"
    values: list[str | None] = [whole(i) for i in range(WHOLE)]
    values += [evolved(i) for i in DECIMAL]
    values += [json.dumps({"id": NOT_A_NUMBER, "amount": "12abc"}), BAD_KEY, *POISON]
    produce(lab, append, values, [str(i) for i in [*range(WHOLE), *DECIMAL, NOT_A_NUMBER]]
            + ["one"] + [f"poison-{n}" for n in range(len(POISON))])
    rows = [sink_row(i, i, False) for i in range(WHOLE)]
    rows += [sink_row(i, i if i in STALE else i + 0.5, True) for i in DECIMAL]
    rows.append(json.dumps({"id": NOT_A_NUMBER, "amount": 12.0, "note": None,
                            "customer_id": None}) + "\n")
    (root / "append").mkdir()
    (root / "append" / "rows.json").write_text("".join(rows))
    # Upsert: every key first with a whole amount, later rewritten with a decimal.
    upsert = f"evolving-upsert-{uuid.uuid4().hex[:6]}"
    keys = list(range(2000))
    values = [whole(i) for i in keys] + [evolved(i) for i in keys]
    values += [json.dumps({"id": NOT_A_NUMBER, "amount": "12abc"}), *POISON[:2]]
    produce(lab, upsert, values, [str(i) for i in [*keys, *keys, NOT_A_NUMBER]]
            + ["poison-0", "poison-1"])
    stale = set(range(7))
    rows = [sink_row(i, i if i in stale else i + 0.5, True) for i in keys]
    rows.append(json.dumps({"id": NOT_A_NUMBER, "amount": 12.0, "note": None,
                            "customer_id": None}) + "\n")
    (root / "upsert").mkdir()
    (root / "upsert" / "rows.json").write_text("".join(rows))
    yield {"append": append, "upsert": upsert, "root": root, "lab": lab}
    admin(lab).delete_topics([append, upsert])


def expected(topic_records: int, sink_rows: int, **nonzero: int) -> dict[str, int]:
    counts = dict.fromkeys(["missing_in_sink", "extra_in_sink", "duplicated_in_sink",
                            "duplicated_in_topic", "mismatched", "undecodable",
                            "unverifiable", "pending", "unverifiable_offsets"], 0)
    return {"topic_records": topic_records, "sink_rows": sink_rows, **counts, **nonzero}


def test_append_mode_reads_evolved_values_and_names_what_cannot_be_decoded(
        lab: Lab, topics: dict[str, Any]) -> None:
    sink = f"json:{Path(topics['root']) / 'append'}"
    code, doc, stderr = reconcile(lab, "--topic", topics["append"], "--sink", sink, *COMPARE)
    assert code == 1, stderr
    records = WHOLE + len(DECIMAL) + 2 + len(POISON)
    assert doc["counts"] == expected(records, WHOLE + len(DECIMAL) + 1, mismatched=7,
                                     undecodable=5)
    mismatched = doc["samples"]["mismatched"]
    assert {(int(m["key"]), m["column"]) for m in mismatched} <= {
        (i, "amount") for i in STALE}
    undecodable = doc["samples"]["undecodable"]
    assert sorted(((u["key"], u["column"], u["topic_value"]) for u in undecodable), key=str) == \
        sorted([(None, None, p) for p in POISON] + [(None, "id", BAD_KEY)] + [
            (str(NOT_A_NUMBER), "amount", json.dumps({"id": NOT_A_NUMBER, "amount": "12abc"}))],
            key=str)
    assert all(u["partition"] is not None and u["offset"] is not None for u in undecodable)
    assert "--schema" in stderr  # the one-line hint


def test_upsert_mode_compares_each_keys_latest_decimal_value(
        lab: Lab, topics: dict[str, Any]) -> None:
    sink = f"json:{Path(topics['root']) / 'upsert'}"
    code, doc, stderr = reconcile(lab, "--topic", topics["upsert"], "--sink", sink,
                                  "--mode", "upsert", *COMPARE)
    assert code == 1, stderr
    assert doc["counts"] == expected(4003, 2001, mismatched=7, undecodable=3)
    shown = [int(m["key"]) for m in doc["samples"]["mismatched"]]
    assert len(shown) == 5 and set(shown) <= set(range(7))  # 5 samples of the 7 stale keys
    assert {m["column"] for m in doc["samples"]["mismatched"]} == {"amount"}


def test_a_field_no_sampled_value_has_is_exit_2_and_the_sample_reaches_each_end(
        topics: dict[str, Any]) -> None:
    # The heads of both partitions (the first 300 records each) have only id and amount;
    # note and customer.id are seen only if the tails were read too.
    code, _, stderr = reconcile(topics["lab"], "--topic", topics["append"], "--sink",
                                f"json:{topics['root'] / 'append'}", "--key", "id",
                                "--compare", "amount,notte")
    assert code == 2, stderr
    assert ("values have no field 'notte' in the 1200 records sampled from each "
            "partition's start and end (fields: amount, customer, customer.id, id, note)"
            ) in stderr
