"""A private PostgreSQL server for sink tests, started from Debian's binaries.

It runs on a free loopback port with its own data directory and is stopped at
the end of the session. PostgreSQL refuses to run as root, so under root it
runs as the ``postgres`` system user that Debian's package creates.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PASSWORD = "kaudit-pg-test-pw"


@dataclass(frozen=True)
class Postgres:
    """A running server."""

    port: int
    bin_dir: str
    password: str = PASSWORD
    user: str = "postgres"
    database: str = "postgres"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    def psql(self, sql: str) -> str:
        """Run SQL with psql over TCP (password auth), returning its output."""
        env = dict(os.environ, PGPASSWORD=self.password)
        proc = subprocess.run(
            [os.path.join(self.bin_dir, "psql"), "-h", "127.0.0.1", "-p", str(self.port),
             "-U", self.user, "-d", self.database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
            capture_output=True, text=True, env=env, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"psql failed: {proc.stderr.strip()}")
        return proc.stdout


def find_bin_dir() -> str | None:
    """Debian's PostgreSQL binaries (newest version), if installed."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(candidates[-1]) if candidates else None


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    """Start a server, yield it, stop it and remove its data."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    root = tempfile.mkdtemp(prefix="kaudit-pg-")
    data = os.path.join(root, "data")
    pwfile = os.path.join(root, "pw")
    with open(pwfile, "w") as fh:
        fh.write(PASSWORD)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(pwfile, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subprocess.run(_as_postgres([os.path.join(bin_dir, "initdb"), "-D", data, "-U", "postgres",
                                 f"--pwfile={pwfile}", "--auth-local=trust",
                                 "--auth-host=scram-sha-256", "-E", "UTF8"]),
                   check=True, capture_output=True, timeout=120)
    # Logical decoding on, for Debezium's PostgreSQL source (pgoutput) in the lab.
    options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c wal_level=logical "
               "-c max_replication_slots=4 -c max_wal_senders=4")
    subprocess.run(_as_postgres([os.path.join(bin_dir, "pg_ctl"), "-D", data, "-o", options,
                                 "-l", os.path.join(root, "server.log"), "-w", "start"]),
                   check=True, capture_output=True, timeout=120)
    try:
        yield Postgres(port=port, bin_dir=bin_dir)
    finally:
        subprocess.run(_as_postgres([os.path.join(bin_dir, "pg_ctl"), "-D", data, "-m", "fast",
                                     "-w", "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
