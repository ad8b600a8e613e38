"""A throwaway PostgreSQL server on loopback for the benchmarks (the recipe of
RECIPES.md and tests/durable/conftest.py): Debian's binaries, run as ``postgres``."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["postgres_dsn"]


def _as_postgres(*args: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else list(args)


@contextlib.contextmanager
def postgres_dsn():
    """Yield the DSN of a fresh database on a new server, or None if it cannot start."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    try:
        import psycopg
    except ImportError:
        psycopg = None
    if not found or psycopg is None:
        yield None
        return
    bin_dir = Path(found[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="arknb-bench-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = folder / "data"
    try:
        subprocess.run(_as_postgres(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "arknb"),
                       check=True, capture_output=True, timeout=120)
        subprocess.run(_as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-o",
                                    f"-h 127.0.0.1 -p {port} -k {folder}", "-l", str(folder / "log"), "-w", "start"),
                       check=True, capture_output=True, timeout=120)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        shutil.rmtree(folder, ignore_errors=True)
        yield None
        return
    base = f"host=127.0.0.1 port={port} user=arknb"
    try:
        with psycopg.connect(base + " dbname=postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE bench")
        yield base + " dbname=bench"
    finally:
        subprocess.run(_as_postgres(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"),
                       capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
