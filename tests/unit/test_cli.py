"""The CLI as a user meets it: help, version, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from kaudit import __version__
from kaudit.cli.app import app
from kaudit.cli.clicompat import Command, Group, Option
from tests.conftest import run_in_process, run_kaudit


def all_commands() -> list[tuple[str, Command]]:
    """Every command and subcommand with its full name."""
    root = typer.main.get_command(app)
    found: list[tuple[str, Command]] = []

    def walk(prefix: str, cmd: Command) -> None:
        found.append((prefix, cmd))
        if isinstance(cmd, Group):
            for name, sub in cmd.commands.items():
                walk(f"{prefix} {name}", sub)

    walk("kaudit", root)
    return found


@pytest.mark.parametrize("name,cmd", all_commands(), ids=lambda v: str(v).replace(" ", "-"))
def test_every_command_and_option_has_help(name: str, cmd: Command) -> None:
    assert cmd.help, f"{name} has no help text"
    for param in cmd.params:
        if isinstance(param, Option) and not param.hidden:
            assert param.help, f"{name} {param.opts[0]} has no help text"


def test_version() -> None:
    result = run_in_process("--version")
    assert (result.code, result.stdout.strip()) == (0, f"kaudit {__version__}")


def test_help_does_not_import_heavy_modules() -> None:
    code = ("import sys; from kaudit.cli.app import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('pyspark', 'confluent_kafka') if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == "HEAVY="


def test_unknown_option_is_exit_2() -> None:
    result = run_in_process("cluster", "--no-such-option")
    assert result.code == 2
    assert "No such option" in result.stderr


# How long these runs take depends on the machine's load (a CI run once took 13 s for a
# 3 s budget, interpreter start-up included), so they guard only against a hang; that the
# waits end at --timeout is proven on a fake clock in test_client_deadline.py. The runs that
# really try to reach Kafka stay in a subprocess for that guard (and so that no librdkafka
# client outlives its test inside the test process); the ones refused before any request
# run in this process (run_in_process), which checks the same exit code and output.
HANG = 120


def test_unreachable_cluster_is_exit_3_within_timeout() -> None:
    # Port 1 on loopback: nothing listens there, the connection is refused.
    result = run_kaudit("cluster", "-b", "127.0.0.1:1", "--timeout", "3", timeout=HANG)
    assert result.code == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("kaudit: error: cannot reach Kafka at 127.0.0.1:1 within 3s: ")
    assert "Traceback" not in result.stderr


def test_blackholed_cluster_is_exit_3_within_timeout() -> None:
    # A port that accepts TCP but never speaks Kafka: a hang without --timeout.
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    port = server.getsockname()[1]
    try:
        result = run_kaudit("cluster", "-b", f"127.0.0.1:{port}", "--timeout", "2",
                            timeout=HANG)
        assert result.code == 3
        assert result.stderr.startswith(f"kaudit: error: cannot reach Kafka at 127.0.0.1:{port}"
                                        " within 2s")
        assert result.stderr.count("\n") == 1
    finally:
        server.close()


def test_a_sub_second_timeout_is_kept_not_refused_by_librdkafka() -> None:
    # librdkafka's connection-setup timeout cannot go below 1 s; kaudit's own deadline can.
    result = run_kaudit("cluster", "-b", "127.0.0.1:1", "--timeout", "0.3", timeout=HANG)
    assert result.code == 3
    assert result.stderr.startswith("kaudit: error: cannot reach Kafka at 127.0.0.1:1 within 0.3s")


@pytest.mark.parametrize("args", [
    ("probe", "--rate", "nan"),
    ("cluster", "--timeout", "inf"),
    ("probe", "consume", "--process-ms", "inf"),
    ("reconcile", "--topic", "t", "--sink", "parquet:/tmp", "--tolerance", "NaN"),
], ids=lambda a: "-".join(a[:2]))
def test_nan_and_infinity_are_refused_by_every_float_option(args: tuple[str, ...]) -> None:
    # click's float ranges let nan through (every comparison with it is false): a probe
    # ran with it and wrote "rate": NaN, which is not JSON.
    result = run_in_process(*args, "-b", "127.0.0.1:1")
    assert result.code == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("is not a finite number.")
    assert result.stdout == ""


@pytest.mark.parametrize("every", ["nan", "inf", "infs"])
def test_a_non_finite_duration_is_refused(every: str) -> None:
    result = run_in_process("probe", "consume", "--crash-worker", every, "-b", "127.0.0.1:1")
    assert result.code == 2
    assert result.stderr == f"kaudit: error: --crash-worker {every!r}: must be more than 0\n"


@pytest.mark.parametrize("args", [("probe", "--existing"), ("reconcile", "--sink", "parquet:/tmp")])
def test_a_topic_name_kafka_refuses_is_exit_2_before_any_request(args: tuple[str, ...]) -> None:
    # The broker would only say "Invalid topic" (and kaudit reported that as unreachable).
    result = run_in_process(*args, "--topic", "orders v2", "-b", "127.0.0.1:1")
    assert result.code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: Invalid value for '--topic': 'orders v2' has characters Kafka does not allow "
        "in a topic name (' '); it allows letters, digits, '.', '_' and '-'")


@pytest.mark.parametrize("extra,message", [
    (("--jars", "/nonexistent/spark-sql-kafka.jar"),
     "kaudit: error: --jars /nonexistent/spark-sql-kafka.jar: no such file\n"),
    (("--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"),
     "kaudit: error: --from '2026-11-02T00:00:00Z' is later than --to "
     "'2026-11-01T00:00:00Z'\n"),
    (("--key", "id", "--compare", "amount,status,amount"),
     "kaudit: error: --compare names amount more than once\n"),
    (("--key", " , "),
     "kaudit: error: --key: give a field name, several joined by commas, or @key\n"),
    (("--key", "id", "--csv"),
     "kaudit: error: --csv writes the discrepancy set as CSV beside its Parquet: add "
     "--output-dir DIR\n"),
    (("--key", "id", "--output-dir", "/proc/kaudit-out"),
     "kaudit: error: --output-dir /proc/kaudit-out: cannot create it: No such file or "
     "directory\n"),
    (("--key", "id", "--output-dir", "/dev/null"),
     "kaudit: error: --output-dir /dev/null: not a directory\n"),
], ids=["jars", "from-to", "compare-twice", "no-key", "csv-alone", "out-uncreatable",
        "out-not-dir"])
def test_reconcile_input_errors_come_before_any_connection(tmp_path: Path,
                                                           extra: tuple[str, ...],
                                                           message: str) -> None:
    # Nothing listens on port 1: these are found before Kafka or Spark is asked anything.
    result = run_in_process("reconcile", "-b", "127.0.0.1:1", "--topic", "orders", "--sink",
                            f"json:{tmp_path}", *extra)
    assert (result.code, result.stderr) == (2, message)


def test_reconcile_avro_input_errors_come_before_any_connection(tmp_path: Path) -> None:
    order = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    (tmp_path / "1.avsc").write_text(json.dumps(order))
    broken = tmp_path / "bad" / "2.avsc"
    broken.parent.mkdir()
    broken.write_text('{"type": "record",\n "name": "Order",\n "fields": [}')
    (tmp_path / "order.avsc").write_text(json.dumps(order))
    cases = [
        (("--value-format", "avro"), "--value-format avro needs the writer schemas"),
        (("--value-schema", str(tmp_path / "1.avsc")), "--value-schema is for Avro values"),
        (("--value-format", "avro", "--value-schema", str(broken)),
         f"{broken}:3: not an Avro schema: not JSON"),
        (("--key-format", "avro", "--key-schema", str(tmp_path / "order.avsc")),
         "name the file ID.avsc"),
        (("--value-format", "avro-plain", "--value-schema", str(tmp_path)),
         "plain Avro records carry no schema id"),
        (("--value-format", "avro", "--value-schema", str(tmp_path)),
         f"{tmp_path / 'order.avsc'}: a writer schema's file is named by its schema id"),
        (("--value-format", "avro", "--value-schema", str(tmp_path / "1.avsc"),
          "--schema", "idx BIGINT"), "--schema declares 'idx', which the reader schema"),
        (("--value-format", "avro", "--value-schema", str(tmp_path / "1.avsc"),
          "--key", "id", "--compare", "amount"),
         f"{tmp_path / '1.avsc'}: the reader schema has no field 'amount' (fields: id)"),
        (("--value-format", "avro", "--value-schema", str(tmp_path / "1.avsc"),
          "--envelope", "debezium", "--key", "id"),
         "the reader schema has no op and after fields: not a Debezium envelope"),
        (("--key-format", "avro"), "--key-format avro needs the writer schemas"),
        (("--key-schema", str(tmp_path / "1.avsc")), "--key-schema is for Avro keys"),
        (("--key-format", "avro-plain", "--key-schema", str(broken)),
         f"{broken}:3: not an Avro schema: not JSON"),
    ]
    for extra, message in cases:
        # Nothing listens on port 1: each is found before Kafka or Spark is asked anything.
        result = run_in_process("reconcile", "-b", "127.0.0.1:1", "--topic", "orders",
                                "--sink", f"json:{tmp_path}", *extra)
        assert result.code == 2, (extra, result.stderr)
        assert result.stderr.startswith("kaudit: error: ") and message in result.stderr, extra
        assert result.stderr.count("\n") == 1, result.stderr


def test_reconcile_schema_registry_errors_come_before_kafka_and_hide_credentials(
        tmp_path: Path) -> None:
    common = ("reconcile", "-b", "127.0.0.1:1", "--topic", "orders", "--sink",
              f"json:{tmp_path}", "--timeout", "5")
    result = run_in_process(*common, "--schema-registry", "http://127.0.0.1:1/")
    assert (result.code, result.stderr) == (2, "kaudit: error: --schema-registry holds the "
                                               "schemas of Confluent-framed Avro: add "
                                               "--value-format avro or --key-format avro\n")
    # Nothing listens on port 1: the registry is asked first, and its password never shown.
    result = run_in_process(*common, "--value-format", "avro", "--schema-registry",
                            "http://ops:s3cret-pw@127.0.0.1:1/apis/ccompat/v7")
    assert result.code == 3, result.stderr
    assert result.stderr.startswith("kaudit: error: schema registry "
                                    "http://127.0.0.1:1/apis/ccompat/v7: cannot reach it")
    assert "s3cret" not in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("extra,message", [
    (("--value-subject", "shop.Order"), "--value-subject names a subject of a schema "
                                        "registry: add --schema-registry URL"),
    (("--value-subject", " ", "--schema-registry", "http://127.0.0.1:1/"),
     "--value-subject: the subject's name is empty"),
    (("--key-subject", "shop.Key", "--value-format", "avro", "--schema-registry",
      "http://127.0.0.1:1/"), "--key-subject is for --key-format avro (Confluent's wire "
                              "format, whose records name their schema ids)"),
    (("--value-subject", "shop.Order", "--value-format", "avro-plain", "--schema-registry",
      "http://127.0.0.1:1/"), "--value-subject is for --value-format avro"),
    (("--value-subject", "shop.Order", "--value-format", "avro", "--value-schema", "DIR",
      "--schema-registry", "http://127.0.0.1:1/"),
     "--value-schema and --value-subject both name the value's writer schemas: give one"),
])
def test_reconcile_subject_errors_come_before_the_registry_and_kafka(
        tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    extra = tuple(str(tmp_path) if arg == "DIR" else arg for arg in extra)
    # Nothing listens on port 1: each is found before the registry or Kafka is asked.
    result = run_in_process("reconcile", "-b", "127.0.0.1:1", "--topic", "orders", "--sink",
                            f"json:{tmp_path}", "--timeout", "5", *extra)
    assert result.code == 2, result.stderr
    assert result.stderr.startswith(f"kaudit: error: {message}"), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr


def test_a_named_subject_is_asked_for_by_its_own_name() -> None:
    from kaudit.reconcile.avro_schemas import SchemaSource

    source = SchemaSource.given("http://127.0.0.1:1/", "orders", 5.0, ("avro", "avro"),
                                ("shop.Order", None))
    assert source is not None
    assert (source.subject("value"), source.named("value")) == ("shop.Order", True)
    assert (source.subject("key"), source.named("key")) == ("orders-key", False)


@pytest.mark.parametrize("extra,message", [
    (("--mode", "append"), "--envelope debezium compares each key's final state: it implies "
                           "--mode upsert, not append"),
    (("--value-format", "string"), "--envelope debezium reads change events in JSON or "
                                   "Avro, not --value-format string"),
])
def test_reconcile_debezium_input_errors_come_before_any_connection(
        tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    result = run_in_process("reconcile", "-b", "127.0.0.1:1", "--topic", "orders", "--sink",
                            f"json:{tmp_path}", "--envelope", "debezium", *extra)
    assert result.code == 2 and result.stderr.startswith(f"kaudit: error: {message}")


def test_a_matrix_without_its_lab_is_exit_2_before_its_first_cell(tmp_path: Path) -> None:
    result = run_in_process("probe", "matrix", "-b", "127.0.0.1:1", "--lab-state-dir",
                            str(tmp_path / "none"))
    assert result.code == 2
    assert result.stderr == (f"kaudit: error: no lab in {tmp_path / 'none'} "
                             "(start one with `kaudit lab up`)\n")


@pytest.mark.parametrize("args,message", [
    (("--txn-size", "5"), "--txn-size needs --transactional"),
    (("--abort-ratio", "0.2", "--txn-size", "3"),
     "--txn-size and --abort-ratio need --transactional"),
    (("--min-insync-replicas", "4"), "--min-insync-replicas 4 is more than "
                                     "--replication-factor 3"),
], ids=["txn-size", "abort-ratio", "min-isr"])
def test_probe_settings_that_would_not_do_what_they_say_are_exit_2(
        args: tuple[str, ...], message: str) -> None:
    # Before: a run without the transactions asked about, or a topic whose min.insync.replicas
    # Kafka 4 silently caps at the replica count; each passed as if it had been probed.
    result = run_in_process("probe", "-b", "127.0.0.1:1", *args)
    assert (result.code, result.stderr) == (2, f"kaudit: error: {message}\n")


@pytest.mark.parametrize("args", [("--min-insync-replicas", "0"),
                                  ("--replication-factor", "1")])
def test_probe_topic_settings_the_help_promises_get_past_the_options(
        args: tuple[str, ...]) -> None:
    # 0 is the broker's min.insync.replicas; the default 2 follows a lower replication factor.
    result = run_kaudit("probe", "-b", "127.0.0.1:1", "--timeout", "1", *args, timeout=HANG)
    assert result.code == 3 and "cannot reach Kafka" in result.stderr


def test_a_session_timeout_librdkafka_refuses_is_exit_2() -> None:
    # Its workers failed to start, were restarted again and again, and the run hung.
    result = run_in_process("probe", "consume", "-b", "127.0.0.1:1", "--session-timeout-ms",
                            "999999999")
    assert result.code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: Invalid value for '--session-timeout-ms': 999999999 is not in the range "
        "1<=x<=3600000.")


def test_bad_properties_file_is_one_line_exit_2(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SSL\nssl.truststore.location=/x/trust.jks\n"
                     "ssl.truststore.password=trustpw\n")
    result = run_in_process("cluster", "-b", "127.0.0.1:1", "-F", str(props))
    assert result.code == 2
    assert result.stderr.count("\n") == 1
    assert f"{props}:2:" in result.stderr and "ssl.ca.location" in result.stderr


def test_missing_properties_file_is_exit_2(tmp_path: Path) -> None:
    result = run_in_process("cluster", "-b", "127.0.0.1:1", "-F", str(tmp_path / "nope"))
    assert result.code == 2 and "no such file" in result.stderr


def test_invalid_librdkafka_property_is_exit_2() -> None:
    result = run_in_process("cluster", "-b", "127.0.0.1:1", "-X", "no.such.property=1")
    assert result.code == 2
    assert "no.such.property" in result.stderr and "Traceback" not in result.stderr


def test_no_lab_is_explained(tmp_path: Path) -> None:
    result = run_in_process("lab", "status", "--state-dir", str(tmp_path / "none"))
    assert result.code == 2 and "kaudit lab up" in result.stderr


def test_secrets_from_a_properties_file_never_reach_output(tmp_path: Path) -> None:
    secret = "Pa55-w0rd-from-file"
    props = tmp_path / "client.properties"
    props.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username="kaudit" password="{secret}";\n')
    report = tmp_path / "report.json"
    # A subprocess: librdkafka's own output with -vv would not go through sys.stderr.
    result = run_kaudit("-vv", "cluster", "-b", "127.0.0.1:1", "-F", str(props),
                        "--timeout", "2", "-f", "json", "-o", str(report))
    assert result.code == 3
    assert secret not in result.stdout + result.stderr
    assert not report.exists() or secret not in report.read_text()


# README "Output": --format table|json and -o on every command. `snapshot` writes JSON only.
_JSON_ONLY = {"kaudit snapshot"}


@pytest.mark.parametrize("name,cmd", [(n, c) for n, c in all_commands()
                                      if not isinstance(c, Group) and n not in _JSON_ONLY],
                         ids=lambda v: str(v).replace(" ", "-"))
def test_every_command_offers_json_and_an_output_file(name: str, cmd: Command) -> None:
    opts = {o for p in cmd.params if isinstance(p, Option) for o in p.opts}
    assert {"--format", "-o"} <= opts, f"{name} lacks --format or -o"


@pytest.mark.parametrize("args", [("probe",), ("reconcile", "--topic", "t", "--sink",
                                               "parquet:/tmp/none", "--key", "id"),
                                  ("check",), ("lab", "status")], ids=lambda a: a[0])
def test_an_output_file_that_cannot_be_written_is_refused_before_any_work(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    # A port nothing listens on: had the command started its work, it would say so.
    common = ("-b", "127.0.0.1:1", "--timeout", "2") if args[0] != "lab" else (
        "--state-dir", str(tmp_path / "lab"))
    for target, reason in ((tmp_path / "no-such-dir" / "r.json", "does not exist"),
                           (tmp_path, "is a directory")):
        result = run_in_process(*args, *common, "-o", str(target))
        assert result.code == 2, result.stderr
        assert reason in result.stderr and "'-o'" in result.stderr
        assert "cannot reach" not in result.stderr and "no lab" not in result.stderr
    assert not (tmp_path / "no-such-dir").exists()


def test_prove_without_a_lab_is_exit_2_before_any_run(tmp_path: Path) -> None:
    result = run_in_process("probe", "prove", "--lab-state-dir", str(tmp_path / "none"),
                            "-b", "127.0.0.1:1")
    assert result.code == 2
    assert result.stderr.strip() == (f"kaudit: error: no lab in {tmp_path / 'none'} "
                                     "(start one with `kaudit lab up`)")


@pytest.mark.parametrize("where, why", [
    ("{tmp}/no-such-dir/events.jsonl", "no such directory {tmp}/no-such-dir"),
    ("{tmp}", "cannot write it: Is a directory"),
    ("/proc/kaudit-events.jsonl", "cannot write it: No such file or directory"),
])
def test_canary_events_file_that_cannot_be_written_is_exit_2_before_kafka(
        tmp_path: Path, where: str, why: str) -> None:
    events = where.format(tmp=tmp_path)
    # Nothing listens on port 1: this is found before Kafka is asked anything.
    result = run_in_process("canary", "-b", "127.0.0.1:1", "--duration", "1",
                            "--events", events)
    assert (result.code, result.stderr) == (
        2, f"kaudit: error: --events {events}: {why.format(tmp=tmp_path)}\n")


def _help(name: str) -> str:
    result = run_in_process(*name.split()[1:], "--help")
    assert result.code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name,cmd", all_commands(), ids=lambda v: str(v).replace(" ", "-"))
def test_help_never_splits_a_token_across_lines(name: str, cmd: Command) -> None:
    """A fault name, an option, a value or a path copied from the help is whole: no line
    ends in a hyphen joined to a word, and every word of the command's help and of its
    options' (fault specs among them) is on one line."""
    import re

    lines = _help(name).splitlines()
    assert not [line for line in lines if re.search(r"\w-$", line)], "\n".join(lines)
    texts = [cmd.help or ""] + [p.help or "" for p in cmd.params
                                if isinstance(p, Option) and not p.hidden]
    words = {w for text in texts for w in text.split() if w != "\b"}
    words |= {opt for p in cmd.params if isinstance(p, Option) and not p.hidden
              for opt in p.opts}
    split = sorted(w for w in words if not any(w in line for line in lines))
    assert not split, (split, "\n".join(lines))


def _as_at_a_terminal() -> None:
    """Ctrl-C as a terminal delivers it: a run started in the background of a script (a CI
    job's) inherits SIGINT ignored, and Python then raises no KeyboardInterrupt at all."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("command", ["check", "cluster"])
def test_ctrl_c_in_a_command_without_its_own_handling_says_interrupted(command: str) -> None:
    """SIGINT while the command waits on a cluster that never answers (a port that
    accepts TCP and says nothing): exit 130 and the one line, as every command ends."""
    import os
    import signal
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(HANG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAUDIT_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaudit", command, "-b",
         f"127.0.0.1:{server.getsockname()[1]}", "--timeout", str(HANG)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env, preexec_fn=_as_at_a_terminal)
    try:
        connection, _ = server.accept()  # the command is at work: its client dialled
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG)
        connection.close()
    finally:
        proc.kill()
        server.close()
    assert (proc.returncode, err) == (130, "kaudit: interrupted\n"), out


def test_lab_up_says_what_a_lab_of_many_brokers_asks_of_the_machine(tmp_path: Path) -> None:
    result = run_in_process("lab", "up", "--brokers", "10", "--kafka-home", str(tmp_path),
                            "--state-dir", str(tmp_path / "lab"))
    assert result.stderr.splitlines()[0].startswith(
        "kaudit lab: warning: 10 brokers are 10 JVMs"), result.stderr
    assert result.code == 2  # no Kafka there: refused, nothing started
    few = run_in_process("lab", "up", "--brokers", "9", "--kafka-home", str(tmp_path),
                         "--state-dir", str(tmp_path / "lab"))
    assert "warning" not in few.stderr and few.code == 2


def test_ctrl_c_inside_a_c_extensions_call_is_an_interrupt_too() -> None:
    """librdkafka's admin calls return with Ctrl-C's KeyboardInterrupt pending, and Python
    raises a SystemError caused by it: still "interrupted" (exit 130), not a bug; another
    SystemError stays one."""
    import typer

    from kaudit.cli.root import Interrupted, KauditGroup

    def c_call_interrupted() -> None:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as pending:
            raise SystemError("returned a result with an exception set") from pending

    def broken() -> None:
        raise SystemError("a bug")

    app = typer.Typer(cls=KauditGroup)
    app.command("hangs")(c_call_interrupted)
    app.command("broken")(broken)
    root = typer.main.get_command(app)
    assert isinstance(root, KauditGroup)
    with pytest.raises(Interrupted):
        root.main(["hangs"], standalone_mode=False)
    with pytest.raises(SystemError, match="a bug"):
        root.main(["broken"], standalone_mode=False)
