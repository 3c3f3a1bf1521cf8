"""A probe's verdict says only what its evidence shows."""

from __future__ import annotations

import pytest

from kaudit.errors import InputError
from kaudit.probe.model import ProbeSettings
from tests.unit.probe.reports import probe_report


def test_nothing_acknowledged_is_inconclusive_and_names_the_permanent_error() -> None:
    report = probe_report(acked=0, failed=50, errors={"MSG_SIZE_TOO_LARGE": 50},
                          settings=ProbeSettings(message_size=1048576))
    assert report.verdict == "inconclusive"
    assert report.violations() == [
        "inconclusive: none of 50 message(s) was acknowledged, so the run shows nothing "
        "about delivery",
        "MSG_SIZE_TOO_LARGE x50: permanent, a --message-size of 1048576 bytes is above the "
        "producer's message.max.bytes or the topic's max.message.bytes",
    ]


def test_a_transient_error_is_not_called_permanent() -> None:
    report = probe_report(acked=0, failed=5, errors={"NOT_ENOUGH_REPLICAS": 5})
    assert report.verdict == "inconclusive"
    assert len(report.violations()) == 1


def test_acknowledged_and_read_back_passes() -> None:
    assert probe_report(acked=10).verdict == "pass"


def test_a_loss_fails() -> None:
    report = probe_report(acked=10, lost=2)
    assert report.verdict == "fail"
    assert report.violations()[0].startswith("lost: 2 acknowledged message(s)")


def test_max_unavailable_makes_refused_writes_part_of_the_verdict() -> None:
    report = probe_report(acked=10, unavailable_s=3)
    assert report.timeline.summary()["unavailable_seconds"] == 3
    assert report.verdict == "pass"  # availability is reported, not judged, by default
    strict = probe_report(acked=10, unavailable_s=3,
                          settings=ProbeSettings(max_unavailable=2))
    assert strict.verdict == "fail"
    assert strict.violations() == ["unavailable: writes were refused or unanswered for 3s, "
                                   "more than --max-unavailable 2s"]
    assert probe_report(acked=10, unavailable_s=2,
                        settings=ProbeSettings(max_unavailable=2)).verdict == "pass"


def test_a_message_a_reader_saw_and_the_log_lost_fails() -> None:
    report = probe_report(acked=10, lost=1, read_then_lost=1)
    assert "read_then_lost: 1 message(s) a reader was shown were lost afterwards" in (
        report.violations())


def test_lose_responses_makes_requests_time_out_unless_told_otherwise() -> None:
    from kaudit.probe.faults.registry import parse_fault

    settings = ProbeSettings(faults=(parse_fault("lose-responses"),))
    assert settings.producer_config()["request.timeout.ms"] == 1000
    mine = ProbeSettings(faults=(parse_fault("lose-responses"),),
                         producer_properties={"request.timeout.ms": "2500"})
    assert mine.producer_config()["request.timeout.ms"] == "2500"
    assert "request.timeout.ms" not in ProbeSettings().producer_config()


@pytest.mark.parametrize("key,option", [("enable.idempotence", "--idempotence/--no-idempotence"),
                                        ("acks", "--acks"), ("request.required.acks", "--acks"),
                                        ("Linger.MS", "--linger-ms"),
                                        ("transactional.id", "--transactional")])
def test_a_producer_property_that_an_option_sets_is_refused(key: str, option: str) -> None:
    # --producer-property enable.idempotence=false under the default --idempotence ran a
    # non-idempotent producer while the report (and the duplicate rule) said idempotent.
    with pytest.raises(InputError, match=f"^--producer-property {key}: use {option}, "):
        ProbeSettings(producer_properties={key: "x"})
    settings = ProbeSettings(producer_properties={"request.timeout.ms": "1000"})
    assert settings.producer_config()["request.timeout.ms"] == "1000"
