"""Subject (e): arknb on the durable SQLite store (``arknb.durable``).

The store's class is found by name in ``arknb.durable`` (any public class whose name
contains "sqlite" and "stor"), so this subject starts measuring as soon as it lands.
Each run uses a fresh session id in one database file under a temporary directory.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import ToolCounter, main, report_unavailable  # noqa: E402

SUBJECT = "arknb+SQLite"


def _find_store():
    import arknb.durable as durable

    for name in sorted(dir(durable)):
        low = name.lower()
        if "sqlite" in low and "stor" in low and not name.startswith("_"):
            return getattr(durable, name)
    raise AttributeError("arknb.durable has no SQLite store class yet")


try:
    import arknb as ark
    ark.AgentRuntime  # noqa: B018
    Store = _find_store()
    from arknb_common import ModelBuildTimer, make_tool, stream_run
except (ImportError, AttributeError) as exc:
    report_unavailable(SUBJECT, f"n/a (not built yet: {exc})")
    sys.exit(0)

timer = ModelBuildTimer()
workdir = Path(tempfile.mkdtemp(prefix="arknb-bench-sqlite-"))
sessions = itertools.count()
store = None


def _open_store():
    for arg in (workdir / "bench.sqlite3", workdir):
        try:
            return Store(arg)
        except Exception:  # noqa: BLE001 - try a file path, then a directory
            continue
    return Store(str(workdir / "bench.sqlite3"))


async def make(chunks: int):
    global store
    if store is None:
        store = _open_store()
    counter = ToolCounter()
    runtime = ark.AgentRuntime(timer.script(chunks), tools=[make_tool(counter)],
                               system_prompt="Be brief.", storage=store,
                               session_id=f"bench-{next(sessions)}")

    async def run():
        return await stream_run(runtime, counter, chunks)

    return run


if __name__ == "__main__":
    main(SUBJECT, make, fresh_per_run=True, extras=lambda: {**timer.extras(), "store": Store.__name__})
