"""The single redaction function."""

from __future__ import annotations

from kaudit.connection.properties import parse_properties
from kaudit.connection.redact import MASK, redact, register_secret


def test_secret_keys_are_masked_in_mappings() -> None:
    out = redact({"sasl.password": "hunter22", "sasl.username": "alice",
                  "nested": {"ssl.key.password": "k3y"}})
    assert out == {"sasl.password": MASK, "sasl.username": "alice",
                   "nested": {"ssl.key.password": MASK}}


def test_registered_secrets_are_masked_inside_free_text() -> None:
    register_secret("correct-horse-battery")
    text = redact("auth failed for alice with correct-horse-battery at broker 1")
    assert "correct-horse-battery" not in text
    assert MASK in text


def test_loading_a_properties_file_registers_its_secrets() -> None:
    parse_properties("sasl.password=p@ss-from-file\n", "f")
    assert "p@ss-from-file" not in redact("error: p@ss-from-file")


def test_inline_jaas_and_url_passwords_are_masked_without_registration() -> None:
    text = redact('PlainLoginModule required username="u" password="zzzz"; '
                  "jdbc:postgresql://kaudit:pgpass@db:5432/x?password=qqqq")
    assert "zzzz" not in text and "pgpass" not in text and "qqqq" not in text


def test_lists_and_non_strings_pass_through() -> None:
    register_secret("abc123")
    assert redact(["abc123", 5, None]) == [MASK, 5, None]


def test_structures_under_secret_keys_are_recursed_not_replaced() -> None:
    entry = {"sasl.jaas.config": {"value": 'x password="pw1";', "source": "STATIC"},
             "ssl.key.password": {"value": None, "source": "DEFAULT_CONFIG"}}
    out = redact(entry)
    assert out["ssl.key.password"] == {"value": None, "source": "DEFAULT_CONFIG"}
    assert out["sasl.jaas.config"]["source"] == "STATIC"
    assert "pw1" not in out["sasl.jaas.config"]["value"]


def test_a_rendered_json_report_stays_json_with_inline_secrets_masked() -> None:
    import json

    doc = {"uri": "jdbc:postgresql://h:5432/db?user=u&password=p%26ss%20x&table=orders",
           "jaas": 'PlainLoginModule required username="u" password="zz\\"z";',
           "bare": "password=tail", "url": "http://bob:hunter2@host/x",
           "properties": "sasl.password=swordfish next"}
    rendered = redact(json.dumps(doc, indent=2))
    back = json.loads(rendered)  # the quotes that close the strings are kept
    assert back == {"uri": f"jdbc:postgresql://h:5432/db?user=u&password={MASK}&table=orders",
                    "jaas": f'PlainLoginModule required username="u" password={MASK};',
                    "bare": f"password={MASK}", "url": f"http://bob:{MASK}@host/x",
                    "properties": f"sasl.password={MASK} next"}


def test_a_registered_secret_is_masked_html_escaped_and_percent_encoded_too() -> None:
    register_secret('p&ss"w<rd> x')
    page = redact("<td>p&amp;ss&quot;w&lt;rd&gt; x</td> db?auth=p%26ss%22w%3Crd%3E%20x&a=1")
    assert page == f"<td>{MASK}</td> db?auth={MASK}&a=1"


def test_a_urls_password_in_a_page_is_masked_and_the_rest_of_the_url_kept() -> None:
    page = "<p>jdbc:postgresql://db/shop?user=u&amp;password=s3cr%26t&amp;table=orders</p>"
    assert redact(page) == f"<p>jdbc:postgresql://db/shop?user=u&amp;password={MASK}" \
                           "&amp;table=orders</p>"


def test_the_inline_patterns_are_skipped_only_where_they_cannot_match() -> None:
    # They run only on text that says "password" or "secret", in any case.
    assert redact('clientId="app" clientSecret="s3cr3t-value";') == (
        f'clientId="app" clientSecret={MASK};')
    assert redact("https://idp.example/token?PASSWORD=hunter22&x=1") == (
        f"https://idp.example/token?PASSWORD={MASK}&x=1")
    plain = "min.insync.replicas=1 on topic orders, acks=all"
    assert redact(plain) == plain
