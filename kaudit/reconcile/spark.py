"""A quiet Spark session with the Kafka connector and JDBC drivers on its classpath.

pyspark is imported here and only here (and in the comparison plan), so the
other commands never pay for it. Spark's own console output is turned down to
errors and routed to a log file, off the user's terminal.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from kaudit.errors import RuntimeUnavailable
from kaudit.jvm import (
    JAVA_OPTION_VARIABLES,
    ClassArchive,
    cache_dir,
    find_java,
    resolve_jars,
)

T = TypeVar("T")

POSTGRES_JDBC = ("org.postgresql", "postgresql", "42.7.4")

_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d %p %c: %m%n
"""


def spark_version() -> str:
    """The installed pyspark's version (the connector must match it exactly)."""
    try:
        import pyspark
    except ImportError:
        raise RuntimeUnavailable("pyspark is not installed (pip install pyspark)") from None
    return str(pyspark.__version__)


#: Iceberg's Spark runtime (one shaded jar per Spark minor version); 1.11.0 is the newest
#: release built for Spark 4.0.
ICEBERG_VERSION = "1.11.0"


def connector_jars(*, iceberg: bool = False, avro: bool = False) -> list[str]:
    """The Kafka source and PostgreSQL JDBC jars, resolved with mvn and cached; with
    ``iceberg``, Iceberg's Spark runtime too (only runs that read an Iceberg sink need it);
    with ``avro``, spark-avro (only runs that decode Avro values need it).

    Only jars that Spark does not already ship are returned: a second
    scala-library or Hadoop client on the classpath would break Spark.
    """
    version = spark_version()
    extra: list[str] = []
    if iceberg:
        runtime = f"iceberg-spark-runtime-{'.'.join(version.split('.')[:2])}_2.13"
        libs = resolve_jars(f"spark/{version}/iceberg-{ICEBERG_VERSION}",
                            [("org.apache.iceberg", runtime, ICEBERG_VERSION)],
                            what=f"Iceberg's Spark runtime {ICEBERG_VERSION}",
                            marker=f"{runtime}-*.jar")
        extra = sorted(str(j) for j in libs.glob(f"{runtime}-*.jar"))
    if avro:
        # Its dependencies (Avro, xz, Scala's) ship with Spark: only its own jar is added.
        libs = resolve_jars(f"spark/{version}/avro", [("org.apache.spark", "spark-avro_2.13",
                                                       version)],
                            what=f"spark-avro {version}", marker="spark-avro_2.13-*.jar")
        extra += sorted(str(j) for j in libs.glob("spark-avro_2.13-*.jar"))
    libs = resolve_jars(
        f"spark/{version}",
        [("org.apache.spark", "spark-sql-kafka-0-10_2.13", version), POSTGRES_JDBC],
        what=f"Spark's Kafka connector {version}", marker="spark-sql-kafka-0-10_2.13-*.jar")
    import pyspark

    shipped = {_artifact(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(j) for j in libs.glob("*.jar") if _artifact(j.name) not in shipped) + extra


def _artifact(jar_name: str) -> str:
    """``kafka-clients-3.9.0.jar`` -> ``kafka-clients``."""
    stem = jar_name.removesuffix(".jar")
    parts = stem.split("-")
    while parts and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


#: pyspark's own Python loggers that print every analysis error to stderr as a JSON line,
#: beside the one-line error kaudit gives for it.
_PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def quiet_pyspark_errors() -> None:
    """Keep pyspark from printing the errors kaudit reports itself (once, in one line)."""
    import logging

    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # no pyspark: start_session says so in one line
        return

    for name in _PYSPARK_ERROR_LOGGERS:
        # A PySparkLogger, as pyspark would make it: it logs with keywords a plain one refuses.
        logger = PySparkLogger.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def error_line(exc: BaseException, limit: int = 300) -> str:
    """The first non-empty line of a Spark or Py4J error, for a one-line message: their
    text often starts with a blank line and goes on with the query and a Java trace."""
    text = str(exc)
    lines = [ln.strip().removeprefix(": ") for ln in text.splitlines() if ln.strip()]
    # Py4J's own first line ("An error occurred while calling o59.load.") says nothing; the
    # Java exception after it says why.
    if len(lines) > 1 and lines[0].startswith("An error occurred while calling "):
        lines = lines[1:]
    return (lines[0] if lines else text)[:limit]


def driver_memory() -> str:
    """The memory of the driver kaudit starts (with ``local[*]``, the executor's too)."""
    return os.environ.get("KAUDIT_SPARK_DRIVER_MEMORY", "2g")


OUT_OF_MEMORY = ("Can't acquire", "Unable to acquire", "OutOfMemoryError",
                 "Java heap space", "GC overhead limit exceeded")
"""What Spark's errors say when a task or the driver ran out of memory."""


def out_of_memory(exc: BaseException, master: str) -> RuntimeUnavailable | None:
    """The one-line error for a run that Spark could not give the memory it needed (a
    resource of the runtime, not a bug: exit 3, with the setting to raise); None for any
    other error."""
    text = str(exc)
    if not any(marker in text for marker in OUT_OF_MEMORY):
        return None
    where = (f"KAUDIT_SPARK_DRIVER_MEMORY (now {driver_memory()})"
             if master.startswith("local") else
             "spark.executor.memory in spark-defaults.conf (SPARK_CONF_DIR)")
    return RuntimeUnavailable(f"Spark ran out of memory ({error_line(exc)}); give it more: "
                              f"{where}")


def running_session(master: str) -> Any | None:
    """The session of a Spark context this process already runs on ``master`` (a notebook's,
    a test suite's), for a run to use and leave running; None when there is none. Its jars
    and settings are the caller's: start it with :func:`start_session` to have kaudit's."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    context = getattr(SparkContext, "_active_spark_context", None)
    if context is None or context.master != master:
        return None
    return SparkSession.getActiveSession() or SparkSession(context)


def start_session(master: str, jars: list[str] | None) -> Any:
    """A SparkSession for one reconcile run; Spark's logs go to the cache's spark-logs."""
    return begin_session(master, jars).wait()


def stop_session(spark: Any, wait_s: float = 120.0) -> None:
    """Stop a session :func:`begin_session` started. When its driver JVM is to write the
    class archive, the JVM is ended now and waited for (it writes the archive as it
    exits), and the archive put in place: once per machine, a few seconds."""
    global _archive
    gateway = getattr(spark.sparkContext, "_gateway", None)
    spark.stop()
    archive, _archive = _archive, None
    if archive is None or archive.partial is None:
        return
    proc = getattr(gateway, "proc", None)
    if gateway is None or proc is None:  # not a JVM of ours
        archive.publish(None)
        return
    from pyspark import SparkContext

    SparkContext._gateway = SparkContext._jvm = None  # a later session starts a new JVM
    archive.publish(_end_jvm(gateway, wait_s))


def _end_jvm(gateway: Any, wait_s: float | None = None) -> int | None:
    """Shut a driver JVM's gateway down and end the JVM; its exit code, or None when it
    had not exited within ``wait_s`` (it is then killed)."""
    gateway.shutdown()
    gateway.proc.terminate()
    try:
        return int(gateway.proc.wait(wait_s))
    except Exception:  # subprocess.TimeoutExpired: a JVM stuck in its exit
        gateway.proc.kill()
        return None


class StartingSession:
    """A driver JVM being started in the background (see :func:`begin_session`)."""

    def __init__(self, master: str, conf: Any, launching: Future[Any], log: Path) -> None:
        self._master, self._conf, self._launching, self._log = master, conf, launching, log

    def wait(self) -> Any:
        """The SparkSession, once the JVM is up; the context is made on the calling
        thread, so that Spark's Ctrl-C handler is the main thread's."""
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        try:
            context = SparkContext(conf=self._conf, gateway=self._launching.result())
        except Exception as exc:  # Py4J / Java gateway errors carry long traces
            raise RuntimeUnavailable(f"cannot start Spark ({self._master}): "
                                     f"{error_line(exc)} (log: {self._log})") from None
        context.setLogLevel("ERROR")
        return SparkSession(context)

    def wait_after(self, work: Callable[[], T]) -> tuple[T, Any]:
        """Do ``work`` on this thread while the JVM starts, then wait for the session:
        ``(work's result, the SparkSession)``. When ``work`` fails (or is interrupted) the
        JVM is stopped unused and the error goes on."""
        try:
            done = work()
        except BaseException:
            self.abandon()
            raise
        return done, self.wait()

    def abandon(self) -> None:
        """Stop the JVM without using it (the run failed before it needed Spark)."""
        try:
            gateway = self._launching.result()
        except Exception:  # it did not start: nothing to stop
            return
        _end_jvm(gateway)


#: The class archive of the driver JVM this process started (see :func:`stop_session`).
_archive: ClassArchive | None = None


def _gc_options(environ: Mapping[str, str] | None = None) -> list[str]:
    """The parallel collector for the driver (and executors): a reconcile run is a batch
    job that makes and drops millions of short-lived rows, and on two cores G1's write
    barriers and concurrent threads took 8-10 s of a 10 M record run (its read and shuffle
    stage alone: 36 s against 29-32 s). Nothing when the environment already picks one."""
    # A collector named in the environment (the JVM's own variables, and the one
    # spark-submit adds) must not be named again: two collectors stop the JVM at start.
    env = os.environ if environ is None else environ
    for name in JAVA_OPTION_VARIABLES:
        if re.search(r"-XX:[+]Use\w*GC\b", env.get(name, "")):
            return []
    return ["-XX:+UseParallelGC"]


def begin_session(master: str, jars: list[str] | None) -> StartingSession:
    """Start the driver JVM in the background and return at once: it takes seconds, which
    the caller spends reading Kafka. Raises :class:`RuntimeUnavailable` (at once, or from
    :meth:`StartingSession.wait`)."""
    global _archive
    java = find_java()
    jar_list = jars if jars is not None else connector_jars()
    log_root = cache_dir() / "spark-logs"
    log_root.mkdir(parents=True, exist_ok=True)
    config = log_root / "log4j2.properties"
    config.write_text(_LOG4J2.format(log=log_root / "spark.log"), encoding="utf-8")
    gc = _gc_options()
    # A JVM that crashes writes its hs_err file in the cache, not the user's cwd.
    java_opts = " ".join([f"-Dlog4j2.configurationFile=file:{config}", *gc,
                          f"-XX:ErrorFile={log_root / 'hs_err_pid%p.log'}"])
    import pyspark

    # The driver's own classes (Spark's jars, not the connectors Spark loads itself) from
    # a class archive: the driver starts seconds sooner. Executors get no archive option.
    # The archive holds classes of pyspark's own jars: another installation needs its own.
    signature = [spark_version(), str(Path(pyspark.__file__).parent), *gc]
    _archive = archive = ClassArchive("spark-driver", java, signature)
    archive_opts = archive.options()
    driver_opts = " ".join([java_opts, *archive_opts])
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = (SparkConf().setAppName("kaudit-reconcile").setMaster(master)
            .set("spark.jars", ",".join(jar_list))
            .set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.sql.session.timeZone", "UTC")
            .set("spark.sql.shuffle.partitions", "8")
            # The run sets the big shuffle's partition count from the topic's size (see
            # job.shuffle_partitions); adaptive execution must not merge partitions back
            # into ones whose hash aggregation no longer fits a task's memory.
            .set("spark.sql.adaptive.coalescePartitions.enabled", "false")
            # The detail aggregation keeps one group per suspect key; past 128 groups in a
            # task (Spark's default) it would sort its rows instead. Suspects are few and
            # their buffers small.
            .set("spark.sql.objectHashAggregate.sortBased.fallbackThreshold", "65536")
            # The summary aggregates one group per key: the small first-level map (65,536
            # groups) fills up at once, and every row then pays two lookups.
            .set("spark.sql.codegen.aggregate.map.twolevel.enabled", "false")
            # pyspark would record the Python call site of every column function for its
            # error context (five Py4J calls and a stack walk each, over a thousand per
            # run); kaudit reports errors in one line of its own.
            .set("spark.python.sql.dataFrameDebugging.enabled", "false")
            # spark-submit starts the driver JVM with these, so they apply from its start.
            .set("spark.driver.extraJavaOptions", driver_opts)
            .set("spark.executor.extraJavaOptions", java_opts)
            .set("spark.driver.memory", driver_memory()))
    log_file = open(log_root / "spark-driver.log", "wb")  # noqa: SIM115 - the JVM keeps it
    # Our own gateway, so the driver JVM's stdout/stderr (JVM warnings, Spark's banner) go
    # to the log file instead of the user's terminal.
    redirect = {"stdout": log_file, "stderr": log_file}
    pool = ThreadPoolExecutor(1, thread_name_prefix="kaudit-spark-jvm")

    def launch() -> Any:
        try:
            return launch_gateway(conf=conf, popen_kwargs=redirect)  # type: ignore[no-untyped-call]
        except Exception:
            if not archive.reading:
                raise
            # An archive the JVM cannot map (a damaged file) stops it at start: drop the
            # archive and start once more without it.
            archive.discard()
            conf.set("spark.driver.extraJavaOptions", java_opts)
            return launch_gateway(conf=conf, popen_kwargs=redirect)  # type: ignore[no-untyped-call]

    launching = pool.submit(launch)
    pool.shutdown(wait=False)
    return StartingSession(master, conf, launching, log_root / "spark-driver.log")
