"""Every command against secured labs (SASL_SSL with SCRAM/PLAIN, and mTLS), and a
weakened plaintext lab for the security rules.

Each lab here has one broker, so it starts quickly; the probe topics use
replication factor 1. A known password must appear nowhere kaudit writes.
"""

from __future__ import annotations

import base64
import json
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from kaudit.connection.properties import read_properties, translate_java_properties
from tests.conftest import Run, run_kaudit

pytestmark = [pytest.mark.kafka]


@dataclass(frozen=True)
class SecureLab:
    """A running secured lab and what `kaudit lab` says about it."""

    state_dir: Path
    bootstrap: str
    status: dict[str, Any]

    @property
    def security(self) -> Path:
        return self.state_dir / "security"

    @property
    def properties(self) -> Path:
        """The printed client properties (user alice, with ACLs)."""
        return Path(self.status["client_properties"])

    def passwords(self) -> dict[str, str]:
        data: dict[str, str] = json.loads((self.security / "passwords.json").read_text())
        return data

    def env(self, properties: Path | None = None) -> dict[str, str]:
        """What `eval "$(kaudit lab env)"` exports."""
        return {"KAUDIT_BOOTSTRAP_SERVERS": self.bootstrap,
                "KAUDIT_COMMAND_CONFIG": str(properties or self.properties)}

    def run(self, *args: str, properties: Path | None = None, timeout: float = 300) -> Run:
        return run_kaudit(*args, env=self.env(properties), timeout=timeout)

    def librdkafka_config(self) -> dict[str, Any]:
        """alice's settings as a librdkafka client needs them, for test fixtures."""
        conf: dict[str, Any] = translate_java_properties(read_properties(self.properties))
        return conf | {"bootstrap.servers": self.bootstrap}


def assert_read_by_kafka_python(doc: dict[str, Any]) -> None:
    """A `cluster` or `snapshot` document whose features (and, for a snapshot, every
    partition's ELR and the controller quorum) were read through kafka-python with the same
    security settings."""
    assert doc["features"] is not None, doc["features_unread"]
    assert doc["features"]["metadata.version"].startswith("4.")
    if "topics" in doc:
        assert doc["elr_unread"] is None
        assert doc["quorum"] is not None, doc["quorum_unread"]
        assert [v["replica_id"] for v in doc["quorum"]["voters"]] == [100]
        partitions = [p for t in doc["topics"] for p in t["partitions"]]
        assert partitions and all(p["elr"] == [] for p in partitions)


def a_topic(lab: SecureLab) -> str:
    """A new one-partition topic, created with the lab's client properties (so that a
    snapshot has a partition whose ELR kafka-python must read)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"elr-read-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(lab.librdkafka_config())
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(60)
    return name


def _start_lab(mode: str, *extra: str) -> Iterator[tuple[Path, Run]]:
    state_dir = Path(tempfile.mkdtemp(prefix=f"kaudit-test-{mode}-"))
    started = run_kaudit("lab", "up", "--brokers", "1", "--security", mode,
                         "--state-dir", str(state_dir), *extra, timeout=900)
    try:
        if started.code != 0:
            pytest.fail(f"kaudit lab up --security {mode} failed ({started.code}): "
                        f"{started.stderr}")
        yield state_dir, started
    finally:
        run_kaudit("lab", "down", "--purge", "--state-dir", str(state_dir), timeout=120)
        shutil.rmtree(state_dir, ignore_errors=True)


def _secure_lab(mode: str) -> Iterator[SecureLab]:
    for state_dir, started in _start_lab(mode):
        status = run_kaudit("lab", "status", "-f", "json", "--state-dir", str(state_dir))
        assert status.code == 0, status.stderr
        yield SecureLab(state_dir, started.stdout.strip(), json.loads(status.stdout))


@pytest.fixture(scope="module")
def sasl_lab() -> Iterator[SecureLab]:
    yield from _secure_lab("sasl_ssl")


@pytest.fixture(scope="module")
def mtls_lab() -> Iterator[SecureLab]:
    yield from _secure_lab("mtls")


def assert_no_secret(secrets: list[str], runs: list[Run], *roots: Path) -> None:
    """No secret in any stdout, stderr, or file under ``roots``."""
    for run in runs:
        for secret in secrets:
            assert secret not in run.stdout and secret not in run.stderr
    files = [f for root in roots for f in ([root] if root.is_file() else root.rglob("*"))
             if f.is_file()]
    assert files or not roots
    for f in files:
        data = f.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"{secret[:3]}... leaked into {f}"


def one_line(run: Run) -> str:
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


def test_lab_status_and_env_point_at_private_client_properties(sasl_lab: SecureLab) -> None:
    assert sasl_lab.status["security"] == "sasl_ssl"
    props = sasl_lab.properties
    text = props.read_text()
    assert "security.protocol=SASL_SSL" in text and "sasl.mechanism=SCRAM-SHA-512" in text
    assert "ssl.truststore.type=PEM" in text
    for private in (props, sasl_lab.security / "passwords.json",
                    sasl_lab.security / "alice.pem", sasl_lab.security / "ca.key"):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    env = run_kaudit("lab", "env", "--state-dir", str(sasl_lab.state_dir))
    assert f"export KAUDIT_COMMAND_CONFIG={props}" in env.stdout.splitlines()
    shown = run_kaudit("lab", "status", "-f", "table", "--state-dir", str(sasl_lab.state_dir))
    assert_no_secret(list(sasl_lab.passwords().values()), [env, shown])


def test_every_command_works_with_the_printed_properties_and_leaks_nothing(
        sasl_lab: SecureLab, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    a_topic(sasl_lab)
    runs = [
        sasl_lab.run("cluster", "-f", "json"),
        sasl_lab.run("snapshot", "-o", str(out / "snapshot.json")),
        # One broker: the internal topics' replication factor is an error, hence --exit-zero.
        sasl_lab.run("check", "--exit-zero", "-f", "json", "-o", str(out / "check.json")),
        sasl_lab.run("check", "--exit-zero", "-f", "sarif", "-o", str(out / "check.sarif")),
        sasl_lab.run("check", "--exit-zero", "-f", "junit", "-o", str(out / "check.xml")),
        sasl_lab.run("check", "--exit-zero", "-f", "github"),
        sasl_lab.run("-vv", "check", "--exit-zero", "--snapshot", str(out / "snapshot.json"),
                     "-f", "table"),
        sasl_lab.run("probe", "--count", "3000", "--replication-factor", "1",
                     "--min-insync-replicas", "1", "--expect", "exactly-once", "-f", "json",
                     "-o", str(out / "probe.json")),
    ]
    for run in runs:
        assert run.code == 0, run.stderr
    # kafka-python (features, ELR) gets the same SCRAM/TLS settings as librdkafka.
    assert_read_by_kafka_python(json.loads(runs[0].stdout))
    assert_read_by_kafka_python(json.loads((out / "snapshot.json").read_text()))
    assert json.loads(runs[0].stdout)["brokers"][0]["port"] == int(
        sasl_lab.bootstrap.rsplit(":", 1)[1])
    check = json.loads((out / "check.json").read_text())
    rules = {f["rule"] for f in check["findings"]}
    assert "KA505" in rules and "KA503" not in rules  # super users set, authorizer on
    probe = json.loads((out / "probe.json").read_text())
    assert probe["verdict"] == "pass" and probe["lost"] == 0
    assert probe["acked"] == 3000
    # A debug run logs librdkafka's own lines; still no password, no key material.
    runs.append(sasl_lab.run("-vv", "cluster", "-f", "json", "-X", "debug=security,broker"))
    assert "SASL" in runs[-1].stderr and "rdkafka" in runs[-1].stderr
    assert_no_secret(list(sasl_lab.passwords().values()), runs, out)
    assert all("PRIVATE KEY" not in r.stdout + r.stderr for r in runs)


def test_librdkafka_properties_with_plain_and_a_warning_for_x_passwords(
        sasl_lab: SecureLab, tmp_path: Path) -> None:
    password = sasl_lab.passwords()["alice"]
    rdkafka = tmp_path / "rdkafka.properties"
    rdkafka.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                       f"sasl.username=alice\nsasl.password={password}\n"
                       f"ssl.ca.location={sasl_lab.security / 'ca.pem'}\n")
    from_file = sasl_lab.run("cluster", "-f", "json", properties=rdkafka)
    assert from_file.code == 0, from_file.stderr
    flags = run_kaudit("cluster", "-f", "json", "-b", sasl_lab.bootstrap,
                       "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-512",
                       "-X", "sasl.username=alice", "-X", f"sasl.password={password}",
                       "-X", f"ssl.ca.location={sasl_lab.security / 'ca.pem'}")
    assert flags.code == 0, flags.stderr
    assert "-X sasl.password on the command line" in flags.stderr
    assert_read_by_kafka_python(json.loads(from_file.stdout))  # PLAIN
    assert_read_by_kafka_python(json.loads(flags.stdout))  # SCRAM from -X flags
    assert_no_secret([password], [from_file, flags])


def test_wrong_password_is_exit_3_with_one_line_and_no_password(
        sasl_lab: SecureLab, tmp_path: Path) -> None:
    wrong = "Wr0ng-" + uuid.uuid4().hex
    bad = tmp_path / "wrong.properties"
    bad.write_text(sasl_lab.properties.read_text().replace(
        sasl_lab.passwords()["alice"], wrong))
    runs = []
    for args in (("cluster",), ("snapshot", "-o", str(tmp_path / "s.json")), ("check",),
                 ("probe", "--count", "100", "--replication-factor", "1"),
                 ("reconcile", "--topic", "orders", "--sink", f"json:{tmp_path}",
                  "--key", "id")):
        run = sasl_lab.run(*args, "--timeout", "20", properties=bad)
        assert run.code == 3, (args, run.stderr)
        line = one_line(run)
        assert "authentication failed" in line, line
        runs.append(run)
    assert not (tmp_path / "s.json").exists()
    assert_no_secret([wrong, sasl_lab.passwords()["alice"]], runs)


def _other_ca(directory: Path) -> Path:
    directory.mkdir(exist_ok=True)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    "other-ca.key", "-out", "other-ca.pem", "-days", "2", "-subj",
                    "/CN=not the lab CA"], cwd=directory, check=True, capture_output=True)
    return directory / "other-ca.pem"


def test_untrusted_broker_certificate_is_exit_3_naming_tls(
        sasl_lab: SecureLab, tmp_path: Path) -> None:
    bad = tmp_path / "untrusted.properties"
    bad.write_text(sasl_lab.properties.read_text().replace(
        str(sasl_lab.security / "ca.pem"), str(_other_ca(tmp_path))))
    run = sasl_lab.run("check", "--timeout", "20", properties=bad)
    assert run.code == 3, run.stderr
    line = one_line(run)
    assert "TLS handshake failed" in line and "certificate verify failed" in line, line


def test_sasl_without_a_mechanism_is_exit_2(sasl_lab: SecureLab, tmp_path: Path) -> None:
    bad = tmp_path / "nomech.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.username=alice\nsasl.password=x\n"
                   f"ssl.ca.location={sasl_lab.security / 'ca.pem'}\n")
    run = sasl_lab.run("cluster", properties=bad)
    assert run.code == 2
    assert "needs sasl.mechanism" in one_line(run)


def test_user_without_acls_gets_a_finding_not_a_crash(sasl_lab: SecureLab) -> None:
    run = sasl_lab.run("check", "--exit-zero", "-f", "json",
                       properties=sasl_lab.security / "nobody.properties")
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    unreadable = [f for f in doc["findings"] if f["rule"] == "KA002"]
    assert unreadable and all("not authorized" in f["message"] for f in unreadable)
    assert "configs of broker 1" in unreadable[0]["message"]
    # DescribeQuorum needs DESCRIBE on the cluster: said, and the quorum rules skip.
    assert any("the controller quorum (not authorized" in f["message"] for f in unreadable)
    assert doc["quorum_unread"].startswith("not authorized")
    assert not {"KA313", "KA314", "KA315"} & {f["rule"] for f in doc["findings"]}


# Its reconcile is a process of its own, as a user runs it: it needs no Spark session of the
# suite's, so CI runs it in the probes share, which starts none.
@pytest.mark.spark
@pytest.mark.probes_share
def test_reconcile_reads_the_secured_topic_through_spark(
        sasl_lab: SecureLab, tmp_path: Path) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"orders-{uuid.uuid4().hex[:6]}"
    conf = sasl_lab.librdkafka_config()
    admin = AdminClient(conf)  # kept referenced: a collected client cancels its futures
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    producer = Producer(conf | {"enable.idempotence": True})
    for i in range(50):
        producer.produce(topic, key=str(i), value=json.dumps({"id": i, "status": "new"}))
    assert producer.flush(30) == 0
    sink = tmp_path / "sink"
    sink.mkdir()
    (sink / "part-0.json").write_text("".join(
        json.dumps({"id": i, "status": "new"}) + "\n" for i in range(50) if i != 7))
    run = sasl_lab.run("reconcile", "--topic", topic, "--sink", f"json:{sink}", "--key", "id",
                       "--compare", "status", "-f", "json", "--output-dir",
                       str(tmp_path / "out"), timeout=600)
    assert run.code == 1, run.stderr
    doc = json.loads(run.stdout)
    assert doc["counts"]["topic_records"] == 50
    assert doc["counts"]["missing_in_sink"] == 1
    assert [int(s["key"]) for s in doc["samples"]["missing_in_sink"]] == [7]
    # Spark's own logs (kept out of the terminal, in kaudit's cache) hold no password either.
    from kaudit.jvm import cache_dir

    assert_no_secret(list(sasl_lab.passwords().values()), [run], tmp_path / "out",
                     cache_dir() / "spark-logs")


def test_mtls_commands_authenticate_with_a_client_certificate(
        mtls_lab: SecureLab, tmp_path: Path) -> None:
    assert mtls_lab.status["security"] == "mtls"
    a_topic(mtls_lab)
    assert "ssl.keystore.type=PEM" in mtls_lab.properties.read_text()
    runs = [
        mtls_lab.run("cluster", "-f", "json"),
        mtls_lab.run("check", "--exit-zero", "-f", "json"),
        mtls_lab.run("probe", "--count", "2000", "--replication-factor", "1",
                     "--min-insync-replicas", "1", "-f", "json"),
        mtls_lab.run("snapshot", "-o", str(tmp_path / "snapshot.json")),
    ]
    for run in runs:
        assert run.code == 0, run.stderr
    assert_read_by_kafka_python(json.loads(runs[0].stdout))
    assert_read_by_kafka_python(json.loads((tmp_path / "snapshot.json").read_text()))
    assert json.loads(runs[2].stdout)["lost"] == 0
    assert "PRIVATE KEY" not in "".join(r.stdout + r.stderr for r in runs)


def test_mtls_without_a_client_certificate_is_exit_3(
        mtls_lab: SecureLab, tmp_path: Path) -> None:
    bare = tmp_path / "nocert.properties"
    bare.write_text("security.protocol=SSL\nssl.truststore.type=PEM\n"
                    f"ssl.truststore.location={mtls_lab.security / 'ca.pem'}\n")
    run = mtls_lab.run("cluster", "--timeout", "8", properties=bare)
    assert run.code == 3, run.stderr
    one_line(run)


def test_a_stopped_secured_lab_restarts_secured(mtls_lab: SecureLab) -> None:
    lab_dir = str(mtls_lab.state_dir)
    assert run_kaudit("lab", "down", "--state-dir", lab_dir, timeout=120).code == 0
    other = run_kaudit("lab", "up", "--security", "plaintext", "--brokers", "1",
                       "--state-dir", lab_dir)
    assert other.code == 2 and "created with --security mtls" in one_line(other)
    again = run_kaudit("lab", "up", "--brokers", "1", "--state-dir", lab_dir, timeout=900)
    assert again.code == 0, again.stderr
    run = mtls_lab.run("cluster", "-f", "json")
    assert run.code == 0, run.stderr


@pytest.fixture(scope="module")
def oauth_lab() -> Iterator[SecureLab]:
    yield from _secure_lab("oauthbearer")


ISSUER_SECRET = "issuer-secret-5f2c9e"


class _UnsignedIssuer(BaseHTTPRequestHandler):
    """An OIDC token endpoint for the oauthbearer lab: client credentials in, an unsigned
    JWT naming the client out (what the lab's unsecured validator accepts)."""

    def do_POST(self) -> None:
        basic = self.headers.get("Authorization", "").removeprefix("Basic ")
        client, _, secret = base64.b64decode(basic).decode().partition(":")
        if secret != ISSUER_SECRET:
            self.send_response(401)
            self.end_headers()
            return
        now = int(time.time())

        def part(doc: dict[str, Any]) -> str:
            return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

        token = f"{part({'alg': 'none'})}.{part({'sub': client, 'iat': now, 'exp': now + 600})}."
        body = json.dumps({"access_token": token, "token_type": "bearer",
                           "expires_in": 600}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def test_oauthbearer_unsecured_and_oidc_tokens_read_features_and_elr(
        oauth_lab: SecureLab, tmp_path: Path) -> None:
    assert oauth_lab.status["security"] == "oauthbearer"
    assert "sasl.mechanism=OAUTHBEARER" in oauth_lab.properties.read_text()
    a_topic(oauth_lab)
    # The lab's own properties: Java's unsecured login module, translated.
    runs = [oauth_lab.run("cluster", "-f", "json"),
            oauth_lab.run("snapshot", "-o", str(tmp_path / "unsecured.json"))]
    for run in runs:
        assert run.code == 0, run.stderr
    assert_read_by_kafka_python(json.loads(runs[0].stdout))
    assert_read_by_kafka_python(json.loads((tmp_path / "unsecured.json").read_text()))
    # OIDC client credentials against a token endpoint: librdkafka and kafka-python each
    # fetch their own token.
    server = HTTPServer(("127.0.0.1", 0), _UnsignedIssuer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        oidc = tmp_path / "oidc.properties"
        oidc.write_text("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
                        "sasl.oauthbearer.method=oidc\nsasl.oauthbearer.client.id=alice\n"
                        f"sasl.oauthbearer.client.secret={ISSUER_SECRET}\n"
                        "sasl.oauthbearer.token.endpoint.url="
                        f"http://127.0.0.1:{server.server_port}/token\n"
                        f"ssl.ca.location={oauth_lab.security / 'ca.pem'}\n")
        out = tmp_path / "oidc"
        out.mkdir()
        oidc_runs = [
            oauth_lab.run("cluster", "-f", "json", properties=oidc),
            oauth_lab.run("snapshot", "-o", str(out / "snapshot.json"), properties=oidc),
            oauth_lab.run("check", "--exit-zero", "-f", "json", "-o", str(out / "check.json"),
                          properties=oidc),
        ]
        wrong = tmp_path / "wrong.properties"
        wrong.write_text(oidc.read_text().replace(ISSUER_SECRET, "not-the-secret"))
        refused = oauth_lab.run("cluster", "--timeout", "10", properties=wrong)
    finally:
        server.shutdown()
    for run in oidc_runs:
        assert run.code == 0, run.stderr
    assert_read_by_kafka_python(json.loads(oidc_runs[0].stdout))
    assert_read_by_kafka_python(json.loads((out / "snapshot.json").read_text()))
    assert_no_secret([ISSUER_SECRET], oidc_runs, out)
    assert refused.code == 3 and "token" in one_line(refused).lower(), refused.stderr


def test_check_flags_a_deliberately_weakened_broker() -> None:
    weak = ("--broker-config", "listeners=PLAINTEXT://0.0.0.0:{port}",
            "--broker-config", "authorizer.class.name="
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "--broker-config", "allow.everyone.if.no.acl.found=true",
            "--broker-config", "super.users=User:ANONYMOUS",
            # The share groups' state with one copy, its min ISR (2) above that.
            "--broker-config", "share.coordinator.state.topic.replication.factor=1")
    for _, started in _start_lab("plaintext", *weak):
        run = run_kaudit("check", "-b", started.stdout.strip(), "-f", "json")
        assert run.code == 1, run.stderr  # KA501 is an error
        findings = json.loads(run.stdout)["findings"]
        by_rule = {f["rule"]: f for f in findings}
        assert by_rule["KA501"]["subject"] == {"kind": "broker", "name": "1"}
        assert "every interface" in by_rule["KA501"]["message"]
        assert "super.users is set" in by_rule["KA505"]["message"]
        assert any("allow.everyone.if.no.acl.found" in f["message"]
                   for f in findings if f["rule"] == "KA002")
        assert "KA503" not in by_rule  # it has an authorizer
        assert (by_rule["KA310"]["expected"], by_rule["KA310"]["actual"]) == (">= 3", "1")
        assert "the share coordinator can write no state" in by_rule["KA311"]["message"]


def test_a_connect_worker_on_the_secured_lab_runs_a_sink_over_sasl_ssl(
        sasl_lab: SecureLab, postgres: Any) -> None:
    """The worker's own clients and its connectors' reach the brokers over SASL_SSL (as the
    lab's admin); its settings file is private and no password reaches the status."""
    from confluent_kafka import Producer

    from kaudit.lab.connect import CONNECT_ID
    from kaudit.lab.state import LabState
    from tests.connect import jdbc_sink, start_connector, wait_until
    from tests.integration.test_pipeline_jdbc import rows_in, value

    up = run_kaudit("lab", "up", "--connect", "--state-dir", str(sasl_lab.state_dir),
                    timeout=900)
    assert up.code == 0, up.stderr
    status = run_kaudit("lab", "status", "-f", "json", "--state-dir", str(sasl_lab.state_dir))
    [worker] = json.loads(status.stdout)["connect"]
    assert (worker["id"], worker["state"]) == (CONNECT_ID, "running")
    node = LabState.load(sasl_lab.state_dir).node(CONNECT_ID)
    settings = Path(node.directory) / "worker.properties"
    assert settings.stat().st_mode & 0o777 == 0o600
    assert "SASL_SSL" in settings.read_text()
    assert_no_secret(list(sasl_lab.passwords().values()), [up, status])

    topic, table = a_topic(sasl_lab), f"secured_{uuid.uuid4().hex[:6]}"
    producer = Producer(sasl_lab.librdkafka_config())
    for i in range(20):
        producer.produce(topic, key=str(i), value=value(i))
    assert producer.flush(60) == 0
    start_connector(node, f"jdbc-{table}", jdbc_sink(
        postgres, topic, table, **{"insert.mode": "insert", "primary.key.mode": "none",
                                   "key.converter": "org.apache.kafka.connect.storage."
                                                    "StringConverter",
                                   "value.converter.schemas.enable": "true"}))
    wait_until(lambda: rows_in(postgres, table) == 20, 120, f"20 rows in {table}")
