"""Issue 26 item 1's matrix in full: every key source x every store (memory, file, SQLite,
PostgreSQL) x {literal, escaped, split}, each run's sinks read back and grepped for the
key and its escaped forms (the kit is ``tests/durable/redaction_matrix.py``; CI runs a
reduced form in ``tests/durable/test_redaction_sinks.py``).

Prints how many cells and sink checks ran, every leak found (there must be none), the
``secret.redacted`` reports published, and the median time per cell by store.

Usage: python benchmarks/redaction_matrix.py [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pg_server import postgres_dsn  # noqa: E402
from tests.durable.redaction_matrix import FORMS, SOURCES, STORES, run_cell  # noqa: E402


async def main_async(stores: tuple[str, ...], dsn: str | None) -> int:
    cells = checks = reports = 0
    leaks: list[str] = []
    times: dict[str, list[float]] = defaultdict(list)
    for store in stores:
        for source in SOURCES:
            for form in FORMS:
                if source == "shape" and form == "split":
                    continue  # a value nobody knows, cut in two, is not detectable
                folder = Path(tempfile.mkdtemp(prefix="arknb-redaction-"))
                started = time.perf_counter()
                try:
                    if store == "postgres":
                        import psycopg

                        with psycopg.connect(dsn, autocommit=True) as conn:  # a clean database per cell
                            conn.execute("drop schema public cascade; create schema public")
                    cell = await run_cell(source, store, form, folder, dsn)
                finally:
                    shutil.rmtree(folder, ignore_errors=True)
                times[store].append(time.perf_counter() - started)
                cells += 1
                checks += len(cell.texts)
                reports += cell.reports
                leaks.extend(cell.failures())
                if source == "model" and cell.tool_got != [cell.value]:
                    leaks.append(f"model/{store}/{form}: the tool did not get the real value")
    print(f"cells (source x store x form): {cells}")
    print(f"sink checks (cell x sink read back): {checks}")
    print(f"secret.redacted reports published: {reports}")
    print(f"leaks found: {len(leaks)}")
    for leak in leaks:
        print("  " + leak)
    for store, values in times.items():
        print(f"median seconds per cell, {store}: {statistics.median(values):.3f}")
    return 1 if leaks else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-postgres", action="store_true", help="leave PostgreSQL out")
    args = parser.parse_args()
    if args.no_postgres:
        return asyncio.run(main_async(tuple(s for s in STORES if s != "postgres"), None))
    with postgres_dsn() as dsn:
        if dsn is None:
            print("PostgreSQL could not start: run with --no-postgres", file=sys.stderr)
            return 2
        return asyncio.run(main_async(STORES, dsn))


if __name__ == "__main__":
    sys.exit(main())
