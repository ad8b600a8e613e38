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
