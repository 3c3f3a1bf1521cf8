"""Java and Maven: find a Java runtime, resolve JVM jars into a per-user cache, and keep a
JVM's class archive there.

The lab (Kafka's jars) and reconcile (Spark's Kafka connector, JDBC drivers)
both get their jars this way: `mvn dependency:copy-dependencies` into a
staging folder that is renamed into place only when Maven succeeds, so a
second run needs no network and a failed download leaves nothing half-done.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from kaudit.errors import RuntimeUnavailable

MAVEN_TIMEOUT_S = 900

Artifact = tuple[str, str, str] | tuple[str, str, str, str]
"""(groupId, artifactId, version) or, for a jar with a classifier (a test jar),
(groupId, artifactId, version, classifier)"""


def cache_dir() -> Path:
    """Per-user cache for resolved jars (``KAUDIT_CACHE_DIR`` overrides)."""
    env = os.environ.get("KAUDIT_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kaudit"


def find_java() -> str:
    """The ``java`` to use (``JAVA_HOME`` first), checked to be version 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise RuntimeUnavailable("Java not found: install a Java 17+ runtime "
                                 "(e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME")
    try:
        out = subprocess.run([candidate, "-version"], capture_output=True, text=True,
                             timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeUnavailable(f"cannot run {candidate}: {exc}") from None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if not m:
        raise RuntimeUnavailable(f"cannot tell the version of {candidate}")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2) or 0)
    if major < 17:
        raise RuntimeUnavailable(f"{candidate} is Java {major}; kaudit needs Java 17 or newer")
    return candidate


def _dependency(artifact: Artifact) -> str:
    g, a, v, *classifier = artifact
    extra = "".join(f"<classifier>{c}</classifier>" for c in classifier)
    return (f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
            f"<version>{v}</version>{extra}</dependency>")


def _pom(name: str, artifacts: Sequence[Artifact]) -> str:
    body = "\n".join(_dependency(a) for a in artifacts)
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kaudit.cache</groupId>
  <artifactId>{name}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{body}
  </dependencies>
</project>
"""


def resolve_jars(name: str, artifacts: Sequence[Artifact], *, what: str,
                 marker: str, progress: bool = False, exclude: Sequence[str] = (),
                 transitive: bool = True) -> Path:
    """Resolve ``artifacts`` and their runtime dependencies into ``cache/name/libs``.

    ``marker`` is a glob that must match once the folder is complete (e.g. the
    main artifact's jar); ``what`` names the jars in error messages; ``exclude`` names
    artifact ids left out (a runtime that provides them); ``transitive`` false fetches
    only ``artifacts`` themselves (jars added to a runtime that has their dependencies).
    """
    root = cache_dir() / name
    libs = root / "libs"
    if any(libs.glob(marker)):
        return libs
    mvn = shutil.which("mvn")
    if not mvn:
        raise RuntimeUnavailable(f"Maven (mvn) not found, needed to fetch {what}: install it "
                                 "(apt-get install maven) or give the jars yourself")
    root.mkdir(parents=True, exist_ok=True)
    # Two kaudit processes that need the same jars at once (two CI jobs on a fresh runner)
    # would share one staging folder: the second waits for the first and uses its jars.
    with _exclusive(root / ".lock"):
        if any(libs.glob(marker)):
            return libs
        return _resolve_into(name, mvn, artifacts, what=what, progress=progress,
                             exclude=exclude, transitive=transitive)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block."""
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file is closed
        yield


def _resolve_into(name: str, mvn: str, artifacts: Sequence[Artifact], *, what: str,
                  progress: bool, exclude: Sequence[str], transitive: bool = True) -> Path:
    root = cache_dir() / name
    libs = root / "libs"
    (root / "pom.xml").write_text(_pom(name.replace("/", "-"), artifacts), encoding="utf-8")
    staging = root / "libs.partial"
    shutil.rmtree(staging, ignore_errors=True)
    cmd = [mvn, "-B", "-f", str(root / "pom.xml"), "dependency:copy-dependencies",
           f"-DoutputDirectory={staging}", "-DincludeScope=runtime"]
    if exclude:
        cmd.append(f"-DexcludeArtifactIds={','.join(exclude)}")
    if not transitive:
        cmd.append("-DexcludeTransitive=true")
    if not progress:
        cmd.insert(1, "-q")
    try:
        proc = subprocess.run(cmd, capture_output=not progress, text=True,
                              timeout=MAVEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RuntimeUnavailable(f"mvn did not resolve {what} within "
                                 f"{MAVEN_TIMEOUT_S}s") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout or "").splitlines() if "[ERROR]" in ln]
        detail = lines[0].replace("[ERROR]", "").strip() if lines else f"exit {proc.returncode}"
        raise RuntimeUnavailable(f"mvn could not resolve {what}: {detail[:300]}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)
    return libs


#: Where a user's own JVM options may already ask for (or against) class data sharing.
JAVA_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
                         "SPARK_SUBMIT_OPTS")
_PARTIAL_MAX_AGE_S = 3600.0
KEPT_ARCHIVES = 2
"""Archives kept per JVM name: two, so that two installations used in turn (two pysparks)
do not push each other's out."""


class ClassArchive:
    """A class-data-sharing archive of a JVM kaudit starts again and again (Spark's driver,
    the lab's brokers): the classes it loads, parsed and verified once, then mapped at each
    start instead of read from the jars (a Spark driver starts about 3 s sooner on two
    cores, a broker about 0.6 s sooner and with a third less CPU).

    The first JVM writes it as it exits (``-XX:ArchiveClassesAtExit``) into a file of its
    own, which :meth:`publish` puts in place once that JVM is gone; later JVMs map it
    (``-XX:SharedArchiveFile``). The name carries what the archive depends on (the Java
    runtime and ``signature``); a JVM that finds it unusable runs without it. Nothing is
    added when the user's own JVM options already mention class data sharing.
    """

    def __init__(self, name: str, java: str, signature: Sequence[str]) -> None:
        real = Path(java).resolve()
        try:
            stamp = str(real.stat().st_mtime_ns)
        except OSError:
            stamp = "?"
        key = hashlib.sha256("\0".join([str(real), stamp, *signature]).encode()).hexdigest()
        self.name = name
        self.path = cache_dir() / "jvm-archives" / f"{name}-{key[:16]}.jsa"
        self.partial: Path | None = None
        self.reading = False
        """Whether :meth:`options` gave the archive to read."""

    def options(self, environ: dict[str, str] | None = None, *, write: bool = True,
                writer: str | None = None) -> list[str]:
        """The JVM options that use the archive, or write it (see :meth:`publish`).

        ``write`` false: only read an archive that is there. ``writer`` names the JVM's
        partial file (this process's pid by default: a process that starts several JVMs
        that may write names each)."""
        env = os.environ if environ is None else environ
        if any(re.search(r"Xshare|SharedArchiveFile|ArchiveClassesAtExit", env.get(v, ""))
               for v in JAVA_OPTION_VARIABLES):
            return []
        if self.path.is_file():
            self.reading = True
            with contextlib.suppress(OSError):
                os.utime(self.path)  # its time is its last use (see _prune)
            return [f"-XX:SharedArchiveFile={self.path}"]
        if not write:
            return []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for old in self.path.parent.glob("*.partial"):  # left by a JVM that was killed
                if time.time() - old.stat().st_mtime > _PARTIAL_MAX_AGE_S:
                    old.unlink(missing_ok=True)
        except OSError:
            return []  # an unwritable cache: start without an archive
        self.partial = self.path.with_name(f"{self.path.name}.{writer or os.getpid()}.partial")
        return [f"-XX:ArchiveClassesAtExit={self.partial}"]

    def publish(self, exit_code: int | None) -> None:
        """The JVM asked to write the archive has exited with ``exit_code`` (None: it was
        not seen to exit): its archive takes its place, or is dropped."""
        partial, self.partial = self.partial, None
        if partial is not None:
            # Not killed by a signal: a JVM writes its archive on its own way out.
            self.adopt(partial, exit_code is not None and exit_code >= 0)

    def adopt(self, partial: Path, complete: bool) -> None:
        """Put the archive a JVM wrote in ``partial`` in place when it is ``complete`` (its
        JVM left on its own way out), or drop it (the JVM was killed while writing)."""
        if partial.parent != self.path.parent or not partial.name.startswith(
                self.path.name + "."):
            return  # not one of this archive's partial files (a lab.json edited by hand)
        try:
            if complete and partial.is_file() and partial.stat().st_size > 0:
                os.replace(partial, self.path)
                self._prune()
            else:
                partial.unlink(missing_ok=True)
        except OSError:
            pass  # the next start writes it again

    def _prune(self) -> None:
        """Keep the :data:`KEPT_ARCHIVES` most recently used archives of this JVM's name:
        another Java or pyspark makes a new one (150-200 MB), and the old one would stay."""
        found = [(f.stat().st_mtime, f) for f in self.path.parent.glob(f"{self.name}-*.jsa")]
        for _, old in sorted(found, reverse=True)[KEPT_ARCHIVES:]:
            if old != self.path:
                old.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove an archive a JVM could not start with; the next start writes it anew."""
        self.reading = False
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)
