"""Child process of tests/durable/test_decision_kill.py: restore the session that
``_crash_child.py one_done_one_running`` left with ``slow`` (c2) in doubt, decide it, and
stop where the parent kills it.

Points:
- ``decision_save``: in the decision's state save (a ``before_persist_state`` hook of an
  in-doubt decision's save), after what the seam records of the decision and before the
  state says it was taken;
- ``rerun_running``: the person's rerun runs (attempt 2 of ``slow``);
- ``resumed_running``: ``slow`` is idempotent, so nobody is asked: ``resume()`` runs it
  again (its second attempt), and the child is killed while it runs (``<resolution>``
  is ignored).

Usage: python _decision_kill_child.py <sqlite|postgres> <dir> <point> <rerun|done|failed>
"""

from __future__ import annotations

import asyncio
import sys

import arknb as ark

from tests.durable._crash_child import hang, make_tools, open_store, ready


async def main(kind: str, directory: str, point: str, resolution: str) -> None:
    store = open_store(kind, directory)

    async def on_slow(ctx: ark.ToolContext) -> None:
        if point in ("rerun_running", "resumed_running"):
            ready(point)
            await hang()

    idempotent = point == "resumed_running"
    runtime = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel(["Both finished."]),
                                             tools=make_tools(directory, on_slow=on_slow, idempotent=idempotent))
    if idempotent:
        result = await runtime.resume()
        print(f"UNEXPECTED {result.stop_reason}", flush=True)
        return
    if point == "decision_save":
        @runtime.hooks.before_persist_state
        async def stop_in_the_decision_save(ctx):
            if ctx.reason.startswith("in_doubt"):
                ready(point)
                await hang()

    [item] = runtime.controller.list_in_doubt()
    if resolution == "rerun":
        decided = await runtime.controller.rerun(item.operation_id)
    elif resolution == "done":
        decided = await runtime.controller.mark_done(item.operation_id, "slow 2 done (first process)")
    else:
        decided = await runtime.controller.mark_failed(item.operation_id, "slow 2 failed (first process)")
    if not decided.ok:
        print(f"UNEXPECTED {decided.error}", flush=True)
        return
    await hang()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
