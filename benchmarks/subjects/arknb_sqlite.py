"""Subject (e): arknb on the durable SQLite store (``arknb.durable.SQLiteStore``).

Each run uses a fresh session id in one database file under a temporary directory;
the store is opened once, as an application would.
"""

from __future__ import annotations

import atexit
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import ToolCounter, main, report_unavailable  # noqa: E402

SUBJECT = "arknb+SQLite"

try:
    import arknb as ark
    from arknb.durable import SQLiteStore as Store
    from arknb_common import ModelBuildTimer, make_tool, stream_run
except ImportError as exc:
    report_unavailable(SUBJECT, f"n/a (not built yet: {exc})")
    sys.exit(0)

timer = ModelBuildTimer()
workdir = Path(tempfile.mkdtemp(prefix="arknb-bench-sqlite-"))
atexit.register(shutil.rmtree, workdir, ignore_errors=True)  # the database goes with the process
sessions = itertools.count()
store = None


async def make(chunks: int):
    global store
    if store is None:
        store = Store(workdir / "bench.sqlite3")
    counter = ToolCounter()
    runtime = ark.AgentRuntime(timer.script(chunks), tools=[make_tool(counter)],
                               system_prompt="Be brief.", storage=store,
                               session_id=f"bench-{next(sessions)}")

    async def run():
        return await stream_run(runtime, counter, chunks)

    return run


if __name__ == "__main__":
    main(SUBJECT, make, fresh_per_run=True, extras=lambda: {**timer.extras(), "store": Store.__name__})
