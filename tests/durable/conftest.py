"""A real PostgreSQL for the durable-store tests, started by the suite itself on loopback.

One throwaway cluster per test session from Debian's binaries (RECIPES.md: PostgreSQL
refuses to run as root, so its programs run as the ``postgres`` user in a temporary
folder); every test gets a database of its own. Without the binaries the PostgreSQL
tests are skipped, except under ``CI=true``, where they fail: CI must run them. A
watchdog process stops the server and removes its folder when the test session ends in
any way, killed included (a ``finally`` does not run then, and the server would live on).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _unavailable(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required under CI=true: {reason}")
    pytest.skip(reason)


def _as_postgres(*args: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else list(args)


# Waits for its stdin to close (the test session's end, or its death: the pipe's other
# end belongs to that process only), then stops the server and removes its folder.
_WATCHDOG = """
import shutil, subprocess, sys
pg_ctl, data, folder, *runas = sys.argv[1:]
sys.stdin.read()
subprocess.run([*runas, pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True, timeout=120)
shutil.rmtree(folder, ignore_errors=True)
"""


def _watch(bin_dir: Path, data: Path, folder: Path) -> subprocess.Popen:
    runas = _as_postgres()
    return subprocess.Popen([sys.executable, "-c", _WATCHDOG, str(bin_dir / "pg_ctl"), str(data), str(folder), *runas],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


_CLUSTER: dict = {}  # how to reach the session's server's files (for pg_restart)


@pytest.fixture(scope="session")
def pg_server():
    """``(base DSN, admin connection factory)`` of a running throwaway server."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'arknb[postgres]')")
    bin_dir = _bin_dir()
    if bin_dir is None:
        _unavailable("PostgreSQL's binaries are not installed (apt-get install postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="arknb-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    try:
        subprocess.run(_as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "arknb"),
                       check=True, capture_output=True, timeout=120)
        subprocess.run(_as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-o",
                                    f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=on", "-l", str(folder / "log"),
                                    "-w", "start"), check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        detail = getattr(exc, "stderr", b"") or b""
        _unavailable(f"could not start PostgreSQL: {exc} {detail.decode(errors='replace')[-500:]}")
    watchdog = _watch(bin_dir, data, folder)
    base = f"host=127.0.0.1 port={port} user=arknb"
    _CLUSTER.update(pg_ctl=str(bin_dir / "pg_ctl"), data=str(data), folder=str(folder), port=port)
    try:
        yield base, lambda: psycopg.connect(base + " dbname=postgres", autocommit=True)
    finally:
        watchdog.stdin.close()  # the watchdog stops the server and removes the folder
        watchdog.wait(timeout=150)


@pytest.fixture
def pg_dsn(pg_server) -> str:
    """The DSN of a fresh, empty database for this test."""
    base, admin = pg_server
    name = f"t_{uuid.uuid4().hex[:12]}"
    with admin() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"{base} dbname={name}"


@pytest.fixture
def pg_restart(pg_server):
    """Restart the session's server (fast shutdown: every connection is closed) and wait
    until it accepts connections again."""
    def restart() -> None:
        c = _CLUSTER
        subprocess.run(_as_postgres(c["pg_ctl"], "-D", c["data"], "-m", "fast", "-o",
                                    f"-h 127.0.0.1 -p {c['port']} -k {c['folder']} -c fsync=on",
                                    "-l", str(Path(c["folder"]) / "log"), "-w", "restart"),
                       check=True, capture_output=True, timeout=120)
    return restart
