"""Sink URIs: parsed before Spark starts; bad ones are one line (exit 2), secrets masked."""

from __future__ import annotations

import pytest

from kaudit.connection.redact import redact
from kaudit.errors import InputError
from kaudit.reconcile.sinks import SinkSpec, parse_sink


def test_an_iceberg_sink_names_catalog_namespace_and_table() -> None:
    sink = parse_sink("iceberg:lake.shop.orders", {"type": "hadoop", "warehouse": "/w"})
    assert sink == SinkSpec("iceberg", "lake.shop.orders", None,
                            {"type": "hadoop", "warehouse": "/w"}, None)
    assert sink.catalog == "lake" and sink.describe() == "iceberg:lake.shop.orders"
    nested = parse_sink("iceberg:rest.a.b.orders", {"type": "rest", "uri": "http://c"})
    assert nested.catalog == "rest"


def test_snapshot_id_is_taken_out_of_the_catalog_options() -> None:
    sink = parse_sink("iceberg:lake.shop.orders", {"type": "hadoop", "snapshot-id": "42"})
    assert sink.snapshot_id == 42 and sink.options == {"type": "hadoop"}


@pytest.mark.parametrize("uri, options, message", [
    ("iceberg:orders", {}, "expected iceberg:CATALOG.DB.TABLE"),
    ("iceberg:lake..orders", {}, "expected iceberg:CATALOG.DB.TABLE"),
    ("iceberg:lake.shop.orders", {"snapshot-id": "-1"}, "expected a snapshot id"),
    ("hudi:/data/orders", {}, "iceberg:CATALOG.DB.TABLE"),
])
def test_bad_sinks_are_input_errors(uri: str, options: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_sink(uri, options)


def test_an_iceberg_catalog_token_never_shows() -> None:
    parse_sink("iceberg:rest.shop.orders", {"type": "rest", "token": "s3cr3t-t0ken"})
    assert "s3cr3t-t0ken" not in redact("401 with token s3cr3t-t0ken")


def test_an_iceberg_name_cannot_break_out_of_its_identifiers() -> None:
    from kaudit.reconcile.sinks import quoted

    assert quoted("lake.shop.orders") == "`lake`.`shop`.`orders`"
    assert quoted("lake.shop.x` UNION SELECT 1 --") == "`lake`.`shop`.`x`` UNION SELECT 1 --`"


def test_a_jdbc_urls_parameters_reach_the_driver_encoded_as_they_came() -> None:
    # A password with "&", "%", "+" and a space arrives percent-encoded; joined back
    # decoded, the driver would read the password up to the "&" and a stray parameter.
    sink = parse_sink("jdbc:postgresql://db:5432/shop?table=orders&user=kaudit"
                      "&password=p%26ss%25%2Bw%20rd", {})
    assert (sink.location, sink.table) == (
        "jdbc:postgresql://db:5432/shop?user=kaudit&password=p%26ss%25%2Bw%20rd", "orders")
    assert sink.describe() == f"{sink.location}&table=orders"
    assert "p&ss%+w rd" not in redact("FATAL: password p&ss%+w rd refused")
    assert parse_sink("jdbc:postgresql://db/shop?table=orders", {}).describe() == \
        "jdbc:postgresql://db/shop?table=orders"
    paths = parse_sink("jdbc:postgresql://db/shop?table=orders&sslrootcert=/etc/ca.pem", {})
    assert paths.location == "jdbc:postgresql://db/shop?sslrootcert=/etc/ca.pem"
