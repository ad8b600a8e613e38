"""TimelineWidget(runtime) on a restored durable runtime shows the earlier runs (DESIGN
§13): the newest page of the store's outbox (store.read_events) is in the widget at once,
older pages come on demand, and the next run's live events join them without duplicates."""

from __future__ import annotations

import asyncio

import arknb as ark
from arknb.widgets import TimelineWidget
from arknb.widgets._timeline_wire import decode
from tests.widgets.conftest import BufferedFrontend

QUIET = {"interval": 0, "call_later": lambda delay, callback: None}


async def _two_runs(store):
    first = ark.AgentRuntime(ark.ScriptedModel(["one", "two"]), storage=store, session_id="tl")
    runs = [(await first.run("first")).run_id, (await first.run("second")).run_id]
    await first.aclose()
    return runs


async def _close(timeline, restored, store):
    timeline.close()
    await restored.aclose()
    await store.aclose()


def _no_duplicates_in_order(events):
    ids = [e["event_id"] for e in events]
    sequences = [e["sequence"] for e in events if e["session_id"] == "tl"]
    assert len(ids) == len(set(ids)), "an event is shown twice"
    assert sequences == sorted(sequences) and len(sequences) == len(set(sequences))


async def test_a_restored_runtimes_timeline_shows_the_earlier_runs_at_once(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runs = await _two_runs(store)

    restored = await ark.AgentRuntime.restore("tl", storage=store, model=ark.ScriptedModel(["three"]))
    stored = await store.read_events("tl")  # the restore's own state.loaded is committed by now
    assert stored[-1].type == "state.loaded"
    timeline = TimelineWidget(restored, **QUIET)  # built in a running loop, as in a notebook cell
    front = BufferedFrontend(timeline)
    assert await timeline.load_history() == len(stored)  # the read the constructor started
    assert [e["event_id"] for e in timeline.events] == [e.event_id for e in stored]
    assert [r["type"] for r in timeline.rows()].count("agent.success") == 2
    html = timeline.to_html()
    assert all(run in html for run in runs) and "2 runs" in html and "older events" not in html

    # A view that opens gets them in its first page, and is told nothing older exists.
    timeline._on_msg(timeline, {"type": "hello", "have": None, "token": "v1"})
    (hello,) = front.of_type("events")
    assert hello["reset"] and hello["exhausted"] and hello["start"] == -len(stored)
    assert [e["event_id"] for e in decode(hello["events"], hello["_buffers"])] == [e.event_id for e in stored]

    # The next run streams live after them: each event once, in order.
    third = (await restored.run("third")).run_id
    timeline._flush()
    shown = front.received()
    _no_duplicates_in_order(shown)
    _no_duplicates_in_order(timeline.events)
    assert [e["run_id"] for e in timeline.events if e["type"] == "agent.success"] == [*runs, third]
    # The widget and the outbox agree (the restore's state.loaded, published before the widget
    # listened, was committed before restore() returned, so the widget read it from the store).
    outbox = [e.event_id for e in await store.read_events("tl")]
    assert [e["event_id"] for e in timeline.events if e["type"] != "llm.chunk"] == outbox
    await _close(timeline, restored, store)


async def test_a_run_started_before_the_stored_page_is_read_is_shown_once_after_it(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runs = await _two_runs(store)
    restored = await ark.AgentRuntime.restore("tl", storage=store, model=ark.ScriptedModel(["three"]))
    timeline = TimelineWidget(restored, **QUIET)
    front = BufferedFrontend(timeline)
    timeline._on_msg(timeline, {"type": "hello", "have": None, "token": "v1"})  # answered once the page is in
    third = (await restored.start("third")).run_id  # its events race the read of the stored page
    await timeline.load_history()
    _no_duplicates_in_order(timeline.events)
    assert [e["run_id"] for e in timeline.events if e["type"] == "agent.success"] == [*runs, third]
    timeline._flush()
    resets = [m for m in front.of_type("events") if m.get("reset")]
    assert resets  # every view was given the page with the earlier runs
    last = resets[-1]
    window = decode(last["events"], last["_buffers"]) + [
        e for m in front.of_type("events")[front.messages.index(last) + 1:] for e in decode(m["events"], m["_buffers"])]
    _no_duplicates_in_order(window)
    assert [e["event_id"] for e in window] == [e["event_id"] for e in timeline.events]
    await _close(timeline, restored, store)


async def test_pages_older_than_the_first_one_come_from_the_outbox_on_demand(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    runs = await _two_runs(store)

    restored = await ark.AgentRuntime.restore("tl", storage=store, model=ark.ScriptedModel([]))
    stored = await store.read_events("tl")
    timeline = TimelineWidget(restored, page_size=5, **QUIET)
    front = BufferedFrontend(timeline)
    assert timeline.paged  # the store keeps an event outbox
    assert await timeline.load_history() == 5  # only the newest page is read at once
    assert [e["event_id"] for e in timeline.events] == [e.event_id for e in stored[-5:]]
    assert "older events are in the store" in timeline.to_html()
    timeline._on_msg(timeline, {"type": "hello", "have": None, "token": "v1"})
    (hello,) = front.of_type("events")
    assert not hello.get("exhausted")  # the view offers to load older events
    timeline._on_msg(timeline, {"type": "older", "before": -5, "before_sequence": stored[-5].sequence,
                                "limit": 100, "token": "v1"})
    await asyncio.wait_for(asyncio.gather(*list(timeline._tasks)), 10)
    [page] = [m for m in front.of_type("events") if m.get("older")]
    events = decode(page["events"], page["_buffers"])  # the wire's column batch, as event dicts
    types = [e["type"] for e in events]
    assert [e["event_id"] for e in events] == [e.event_id for e in stored[:-5]] and page["start"] == -len(stored)
    assert set(runs) == {e["run_id"] for e in events} and "llm.chunk" not in types
    assert page["exhausted"] is True  # the rest of the session fits in one page
    await _close(timeline, restored, store)


async def test_a_restored_timeline_reads_only_its_pages_however_long_the_session(tmp_path):
    """The store reads its outbox backwards (read_events_before): the newest page and each
    older one cost one read of that page, not a walk from the session's first event."""
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    await _two_runs(store)
    calls = {"forward": 0, "backward": []}
    read_events, read_before = store.read_events, store.read_events_before

    async def forward(*args, **kwargs):
        calls["forward"] += 1
        return await read_events(*args, **kwargs)

    async def backward(session_id, before_sequence=None, *, limit):
        calls["backward"].append((before_sequence, limit))
        return await read_before(session_id, before_sequence, limit=limit)

    store.read_events, store.read_events_before = forward, backward
    restored = await ark.AgentRuntime.restore("tl", storage=store, model=ark.ScriptedModel([]))
    stored = await read_events("tl")  # (the unwrapped read: not counted)
    timeline = TimelineWidget(restored, page_size=4, **QUIET)
    front = BufferedFrontend(timeline)
    assert await timeline.load_history() == 4
    assert [e["event_id"] for e in timeline.events] == [e.event_id for e in stored[-4:]]
    timeline._on_msg(timeline, {"type": "older", "before": -4, "before_sequence": stored[-4].sequence,
                                "limit": 3, "token": "v1"})
    await asyncio.wait_for(asyncio.gather(*list(timeline._tasks)), 10)
    [page] = [m for m in front.of_type("events") if m.get("older")]
    assert [e["event_id"] for e in decode(page["events"], page["_buffers"])] == [e.event_id for e in stored[-7:-4]]
    assert calls == {"forward": 0, "backward": [(None, 4), (stored[-4].sequence, 3)]}
    await _close(timeline, restored, store)


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
