"""What the benchmarks under bench/ share: the lab, kaudit's command line, the Kafka tools.

Each benchmark is an executable script in this directory (``bench/check``, ``bench/probe``);
running one puts this directory first on ``sys.path``, so ``import _common`` finds this
module. Nothing here is part of kaudit itself.

The functions take the script's parsed arguments and read only these attributes:
``work`` (the run's temporary directory), ``kaudit`` (another kaudit command, or None),
``bootstrap``, ``state_dir``, ``brokers``, ``keep_lab`` (the lab), and ``kafka_libs``,
``kafka_version``, ``java`` (the Kafka tools).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The benchmark's own imports of kaudit come from this checkout too, as its child processes'
# do (see kaudit_base), whatever kaudit is pip-installed (or none).
if str(REPO) not in sys.path:
    sys.path.insert(1, str(REPO))
KAFKA_VERSION = "4.3.1"

# How kafka-run-class.sh launches a tool when nothing is overridden
# (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_JMX_OPTS); only the log4j2
# configuration differs: ours sends WARN and above to stderr, like tools-log4j2.yaml.
JVM_FLAGS = [
    "-Xmx256M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
    "-Dcom.sun.management.jmxremote",
    "-Dcom.sun.management.jmxremote.authenticate=false",
    "-Dcom.sun.management.jmxremote.ssl=false",
]

LOG4J2_YAML = """\
Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDERR
"""

_prog = "bench"


class BenchError(Exception):
    """Something the benchmark needs failed: exit 1 with this message."""


def set_prog(name: str) -> None:
    """Name the benchmark in progress messages (``bench/check: ...``)."""
    global _prog
    _prog = name


def say(msg: str) -> None:
    """One progress line on stderr (stdout carries only the table or the JSON)."""
    print(f"{_prog}: {msg}", file=sys.stderr, flush=True)


def dev_null_intact() -> None:
    """Fail loudly if something replaced the /dev/null device (timings would be off)."""
    if not stat.S_ISCHR(os.stat(os.devnull).st_mode):
        raise BenchError(
            f"{os.devnull} is no longer a character device; restore it as root: "
            f"rm {os.devnull} && mknod -m 666 {os.devnull} c 1 3"
        )


# --------------------------------------------------------------------------- kaudit


def kaudit_base(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The kaudit command line and its environment.

    By default the checkout this script lives in (``python -m kaudit`` with the repository
    first on PYTHONPATH), so the benchmark measures this tree whatever is pip-installed.
    Compiled bytecode goes to a private cache (PYTHONPYCACHEPREFIX) so a
    PYTHONDONTWRITEBYTECODE environment does not make every run recompile everything, as
    no installed kaudit would, and nothing is written into the source tree.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(args.work / "pycache")
    if args.kaudit:
        return shlex.split(args.kaudit), env
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    return [sys.executable, "-m", "kaudit"], env


def run_kaudit(args: argparse.Namespace, *cli: str, timeout: float | None = None) -> str:
    """Run a kaudit command (lab management), return its stdout; raise with its stderr."""
    base, env = kaudit_base(args)
    argv = base + list(cli)
    proc = subprocess.run(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise BenchError(f"`{shlex.join(argv)}` exited {proc.returncode}:\n" + proc.stderr.strip())
    return proc.stdout


def warm_bytecode(args: argparse.Namespace) -> None:
    """Compile this checkout's kaudit into the private bytecode cache of :func:`kaudit_base`,
    so the first timed run does not pay for compiling modules (an installed kaudit would
    not). Nothing is written into the source tree; a no-op with ``--kaudit``."""
    if args.kaudit:
        return
    _, env = kaudit_base(args)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "kaudit")],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=False,
    )


# --------------------------------------------------------------------------- lab


@contextlib.contextmanager
def lab(args: argparse.Namespace) -> Iterator[str]:
    """Yield the bootstrap servers of the cluster to benchmark; stop what we started."""
    if args.bootstrap:
        yield args.bootstrap
        return
    if args.state_dir:
        state_dir = Path(args.state_dir).expanduser().resolve()
        status: dict[str, Any] = {}
        with contextlib.suppress(BenchError, ValueError):
            status = json.loads(
                run_kaudit(args, "lab", "status", "--state-dir", str(state_dir), "-f", "json")
            )
        nodes = status.get("brokers", []) + status.get("controllers", [])
        if nodes and all(n.get("alive") for n in nodes):
            say(f"using the running lab in {state_dir}; leaving it running")
            yield status["bootstrap"]
            return
        own_dir = False
    else:
        state_dir = args.work / "lab"
        own_dir = True
    started = time.perf_counter()
    try:
        say(f"starting a lab with {args.brokers} broker(s) in {state_dir}")
        out = run_kaudit(
            args, "lab", "up", "--state-dir", str(state_dir), "--brokers", str(args.brokers)
        )
        bootstrap = out.strip().splitlines()[-1].strip()
        say(f"lab ready in {time.perf_counter() - started:.0f} s: {bootstrap}")
        yield bootstrap
    finally:
        if args.keep_lab:
            say(f"leaving the lab running (--keep-lab): --state-dir {state_dir}")
        else:
            # A second Ctrl-C must not leave brokers behind: ignore it while cleaning up
            # (the lab command inherits the ignored SIGINT too).
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                say(f"stopping and purging the lab in {state_dir}")
                run_kaudit(
                    args, "lab", "down", "--purge", "--state-dir", str(state_dir), timeout=300
                )
            except (BenchError, subprocess.TimeoutExpired) as exc:
                say(f"WARNING: could not stop the lab in {state_dir}: {exc}")
            finally:
                signal.signal(signal.SIGINT, previous)
            if own_dir:
                shutil.rmtree(state_dir, ignore_errors=True)


# --------------------------------------------------------------------------- Kafka tools


def kafka_libs(
    args: argparse.Namespace, required: Sequence[str] = ("kafka_2.13", "kafka-tools")
) -> Path:
    """The directory of the Kafka jars; raise unless it holds ``<name>-<version>.jar``."""
    if args.kafka_libs:
        libs = Path(args.kafka_libs).expanduser()
    else:
        cache = os.environ.get("KAUDIT_CACHE_DIR") or str(
            Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kaudit"
        )
        libs = Path(cache) / "kafka" / args.kafka_version / "libs"
    jars = {p.name for p in libs.glob("*.jar")}
    for jar in (f"{name}-{args.kafka_version}.jar" for name in required):
        if jar not in jars:
            raise BenchError(
                f"{libs} has no {jar} (run `kaudit lab up` once, or give --kafka-libs DIR)"
            )
    return libs


def java_tool(args: argparse.Namespace, libs: Path) -> tuple[list[str], dict[str, str]]:
    """``java`` with kafka-run-class.sh's tool flags and our WARN log4j2 config, and the
    environment to run it in; append a main class and its arguments."""
    java = shutil.which(args.java) or args.java
    log4j = args.work / "tools-log4j2.yaml"
    log4j.write_text(LOG4J2_YAML)
    jvm = [
        java,
        *JVM_FLAGS,
        f"-Dlog4j2.configurationFile={log4j}",
        f"-Dkafka.logs.dir={args.work / 'logs'}",
        "-cp",
        f"{libs}/*",
    ]
    java_env = {k: v for k, v in os.environ.items() if not k.startswith("JAVA_TOOL_OPTIONS")}
    return jvm, java_env


def add_common_options(p: argparse.ArgumentParser, kafka_tools: bool = True) -> None:
    """--brokers, --state-dir/--bootstrap, --keep-lab, --kafka-version, --kafka-libs, --java,
    --kaudit and --json, as every benchmark spells them (without --kafka-version,
    --kafka-libs and --java when ``kafka_tools`` is false: a benchmark that runs no Kafka
    tool)."""
    p.add_argument("--brokers", type=int, default=3, help="brokers of a lab we start (3)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--state-dir", help="use the lab in DIR (started if not running)")
    where.add_argument("--bootstrap", "-b", help="use this cluster; start no lab")
    p.add_argument(
        "--keep-lab",
        action="store_true",
        help="leave a lab this script started running (rerun with --state-dir)",
    )
    if kafka_tools:
        p.add_argument("--kafka-version", default=KAFKA_VERSION)
        p.add_argument(
            "--kafka-libs",
            help="directory of the Kafka jars (default: kaudit's lab cache for --kafka-version)",
        )
        p.add_argument("--java", default="java")
    p.add_argument(
        "--kaudit", help="kaudit command to time (default: python -m kaudit from this checkout)"
    )
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


class Topics:
    """Creates the reference tools' topics (kaudit creates its own) and deletes them."""

    def __init__(self, bootstrap: str, partitions: int, rf: int, min_isr: int, prefix: str
                 ) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin: Any = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 60000})
        self.partitions, self.rf, self.min_isr = partitions, rf, min_isr
        self.live: set[str] = set()
        self.prefix = prefix

    def create(self, label: str) -> str:
        """A fresh topic ``<prefix><label>-<random>``, every partition led."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic

        name = f"{self.prefix}{label}-{uuid.uuid4().hex[:8]}"
        new = NewTopic(
            name,
            num_partitions=self.partitions,
            replication_factor=self.rf,
            config={"min.insync.replicas": str(self.min_isr)},
        )
        try:
            self.admin.create_topics([new], operation_timeout=60, request_timeout=120)[
                name
            ].result()
        except KafkaException as exc:
            raise BenchError(f"creating {name}: {exc.args[0].str()}") from exc
        self.live.add(name)
        deadline = time.monotonic() + 120
        while True:
            md = self.admin.list_topics(topic=name, timeout=30).topics.get(name)
            if (
                md is not None
                and md.error is None
                and len(md.partitions) == self.partitions
                and all(
                    p.leader >= 0 and len(p.isrs) >= self.min_isr for p in md.partitions.values()
                )
            ):
                return name
            if time.monotonic() > deadline:
                raise BenchError(f"topic {name} still has partitions without a leader after 120 s")
            time.sleep(0.2)

    def delete(self, name: str) -> None:
        """Delete a topic this benchmark created (warn, do not fail, when it cannot)."""
        from confluent_kafka import KafkaException

        try:
            self.admin.delete_topics([name], operation_timeout=60, request_timeout=120)[
                name
            ].result()
            self.live.discard(name)
        except KafkaException as exc:
            say(f"WARNING: could not delete {name}: {exc.args[0].str()}")

    def close(self) -> None:
        """Delete what is left, then destroy the client while the cluster still runs (a
        client outliving the lab would log connection errors until the process ends)."""
        for name in sorted(self.live):
            self.delete(name)
        self.admin = None
        gc.collect()
