"""Subject (c): arknb with 3 no-op hooks on every one of the ten slots.

Per slot: two sync functions and one async function, all returning ``None``
(proceed), registered through the notebook decorators ``@runtime.hooks.<slot>``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import ToolCounter, main, report_unavailable  # noqa: E402

SUBJECT = "arknb+3hooks"

try:
    import arknb as ark
    ark.AgentRuntime  # noqa: B018
    from arknb_common import HOOK_SLOTS, ModelBuildTimer, make_tool, stream_run
except (ImportError, AttributeError) as exc:
    report_unavailable(SUBJECT, f"n/a (not built yet: {exc})")
    sys.exit(0)

timer = ModelBuildTimer()


def noop_sync(ctx):
    return None


async def noop_async(ctx):
    return None


async def make(chunks: int):
    counter = ToolCounter()
    runtime = ark.AgentRuntime(timer.script(chunks), tools=[make_tool(counter)],
                               system_prompt="Be brief.")
    for slot in HOOK_SLOTS:
        decorator = getattr(runtime.hooks, slot)
        for i, fn in enumerate((noop_sync, noop_async, noop_sync)):
            decorator(name=f"noop_{slot}_{i}")(fn)
    assert len(list(runtime.hooks)) == 3 * len(HOOK_SLOTS)

    async def run():
        return await stream_run(runtime, counter, chunks)

    return run


if __name__ == "__main__":
    main(SUBJECT, make, fresh_per_run=True, extras=timer.extras)
