"""TimelineWidget(runtime) on a restored durable runtime shows the earlier runs: its older
pages come from the store's outbox (store.read_events), also runs of a killed process."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb.widgets import TimelineWidget
from arknb.widgets._timeline_wire import decode
from tests.widgets.conftest import BufferedFrontend


async def test_a_restored_runtimes_timeline_pages_in_the_earlier_runs_from_the_outbox(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    first = ark.AgentRuntime(ark.ScriptedModel(["one", "two"]), storage=store, session_id="tl")
    runs = [(await first.run("first")).run_id, (await first.run("second")).run_id]
    await first.aclose()

    restored = await ark.AgentRuntime.restore("tl", storage=store, model=ark.ScriptedModel([]))
    timeline = TimelineWidget(restored, interval=0, call_later=lambda delay, callback: None)
    front = BufferedFrontend(timeline)
    assert timeline.paged  # the store keeps an event outbox
    timeline._on_msg(timeline, {"type": "older", "before": 0, "limit": 100, "token": "v1"})
    await asyncio.wait_for(asyncio.gather(*list(timeline._tasks)), 10)
    [page] = [m for m in front.of_type("events") if m.get("older")]
    events = decode(page["events"], page["_buffers"])  # the wire's column batch, as event dicts
    types = [e["type"] for e in events]
    run_ids = {e["run_id"] for e in events}
    assert set(runs) <= run_ids and types.count("agent.success") == 2 and "llm.chunk" not in types
    assert page["exhausted"] is True  # the whole session fits in one page
    timeline.close()
    await restored.aclose()
    await store.aclose()


async def test_a_decision_that_leaves_its_batch_waiting_is_in_the_outbox_at_once(tmp_path):
    """The batch waits for the next decision, maybe for hours: ``approval.decided`` of the
    first is committed with it (what a kernel killed meanwhile leaves for a replaying
    chat), not with a commit that comes only when the run goes on."""
    import json

    @ark.tool(risk="dangerous")
    def transfer(amount: int) -> str:
        """Move money."""
        return f"moved {amount}"

    turn = ark.ScriptedTurn(tool_calls=[ark.ToolCall(id=f"c{n}", name="transfer", arguments_json=json.dumps(
        {"amount": n}), index=n - 1) for n in (1, 2)])
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runtime = ark.AgentRuntime(ark.ScriptedModel([turn, "done"]), tools=[transfer], storage=store, session_id="d")
    assert (await runtime.run("go")).stop_reason == "awaiting_approval"
    first, _ = runtime.controller.list_pending_approvals()
    assert (await runtime.controller.approve(first.approval_id)).ok

    decided = [e.payload for e in await store.read_events("d") if e.type == ark.EventTypes.APPROVAL_DECIDED]
    assert [(p["approval_id"], p["decision"], p["all_decided"]) for p in decided] == [
        (first.approval_id, "approved", False)]
    await runtime.aclose()
    await store.aclose()
