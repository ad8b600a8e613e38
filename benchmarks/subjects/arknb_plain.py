"""Subject (b): arknb with no hooks, default storage, consumed via ``run_stream``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import ToolCounter, main, report_unavailable  # noqa: E402

SUBJECT = "arknb"

try:
    import arknb as ark
    ark.AgentRuntime  # noqa: B018
    from arknb_common import ModelBuildTimer, make_tool, stream_run
except (ImportError, AttributeError) as exc:
    report_unavailable(SUBJECT, f"n/a (not built yet: {exc})")
    sys.exit(0)

timer = ModelBuildTimer()


async def make(chunks: int):
    counter = ToolCounter()
    runtime = ark.AgentRuntime(timer.script(chunks), tools=[make_tool(counter)],
                               system_prompt="Be brief.")

    async def run():
        return await stream_run(runtime, counter, chunks)

    return run


if __name__ == "__main__":
    main(SUBJECT, make, fresh_per_run=True, extras=timer.extras)
