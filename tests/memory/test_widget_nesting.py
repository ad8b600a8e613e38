"""Widgets with sub-agents and compression: the chat nests a child's transcript in the
delegate_task card; the timeline nests a child's spans under that call and marks compressions."""

from __future__ import annotations

import arknb as ark
from arknb import EventTypes, ScriptedModel
from arknb.memory import ContextCompressor
from arknb.widgets._timeline_model import spans
from arknb.widgets._transcript import Transcript

from ._subagent_kit import cleaner, delegate


async def delegated_run(tmp_path):
    storage = ark.MemoryStateStorage()
    model = ScriptedModel([delegate("d1", "cleaner", "Clear /tmp/cache."), "Done."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="p", subagents=[cleaner(tmp_path, storage)])
    events: list[ark.AgentEvent] = []
    parent.bus.subscribe(EventTypes.ANY, events.append)
    await parent.run("Free space.")
    return parent, events


async def test_the_transcript_puts_a_childs_work_inside_the_delegate_card(tmp_path) -> None:
    parent, events = await delegated_run(tmp_path)
    transcript = Transcript()
    for event in events:
        transcript.apply(event)
    entries = transcript.snapshot()["entries"]
    card = next(e for e in entries if e["kind"] == "tool")
    assert card["call_id"] == "d1" and card["status"] == "awaiting_approval"
    sub = card["subagent"]
    assert sub["session_id"] == "p.cleaner.1" and sub["status"] == "awaiting_approval"
    kinds = [(e["kind"], e.get("name") or e.get("text", "")[:8]) for e in sub["entries"]]
    assert ("user", "Clear /t") in kinds and ("tool", "clear_cache") in kinds
    child_tool = next(e for e in sub["entries"] if e["kind"] == "tool")
    assert child_tool["status"] == "awaiting_approval"
    # Nothing of the child leaked into the parent's own entries.
    assert not any(e["kind"] == "tool" and e["name"] == "clear_cache" for e in entries)
    assert [e["text"] for e in entries if e["kind"] == "user"] == ["Free space."]

    [item] = parent.controller.list_pending_approvals()
    await parent.controller.approve(item.approval_id)
    await parent.current_run.wait()
    replay = Transcript()
    for event in events:  # the same events as dicts (a saved trace) nest the same way
        replay.apply(event.to_dict())
    card = next(e for e in replay.snapshot()["entries"] if e["kind"] == "tool")
    assert card["status"] == "done" and card["result"] == "The cache at /tmp/cache is cleared."
    assert card["subagent"]["status"] == "completed"
    assert [e["status"] for e in card["subagent"]["entries"] if e["kind"] == "tool"] == ["done"]


async def test_the_chat_widget_lists_the_childs_approval_and_approves_it(tmp_path) -> None:
    from arknb.widgets import ChatWidget

    storage = ark.MemoryStateStorage()
    model = ScriptedModel([delegate("d1", "cleaner", "Clear /tmp/cache."), "Done."])
    parent = ark.AgentRuntime(model, storage=storage, session_id="p", subagents=[cleaner(tmp_path, storage)])
    chat = ChatWidget(parent, call_later=lambda delay, fn: fn())
    await parent.run("Free space.")
    chat._flush()
    [card] = chat.approvals
    assert card["approval_id"].startswith("cleaner/") and card["tool_name"] == "clear_cache"
    tool = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert tool["subagent"]["session_id"] == "p.cleaner.1"
    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "r1"})
    while chat._tasks:
        await next(iter(chat._tasks))
    result = await parent.current_run.wait()
    assert result.stop_reason == "completed"
    chat._flush()
    assert chat.approvals == []
    tool = next(e for e in chat.transcript["entries"] if e["kind"] == "tool")
    assert tool["status"] == "done" and tool["subagent"]["status"] == "completed"
    chat.close()


async def approved_spans(tmp_path):
    """The delegated run, its child's approval given at the parent, and the timeline's spans."""
    parent, events = await delegated_run(tmp_path)
    [item] = parent.controller.list_pending_approvals()
    await parent.controller.approve(item.approval_id)
    await parent.current_run.wait()
    found = spans([e.to_dict() for e in events])
    return events, found, {s["id"]: s for s in found}


async def test_timeline_spans_nest_a_child_run_under_the_delegate_call(tmp_path) -> None:
    events, found, by_id = await approved_spans(tmp_path)
    child_runs = [s for s in found if s["kind"] == "run" and s["parent"] is not None]
    assert child_runs, found
    for run in child_runs:
        owner = by_id[run["parent"]]
        assert owner["kind"] == "tool" and owner["label"] == "delegate_task d1"
        assert run["depth"] == owner["depth"] + 1
    # The child's own tool call sits inside the child's run.
    clear = next(s for s in found if s["label"].startswith("clear_cache"))
    ancestor = by_id[clear["parent"]]
    while ancestor["kind"] != "run":
        ancestor = by_id[ancestor["parent"]]
    assert ancestor in child_runs
    first_delegate = next(s for s in found if s["label"] == "delegate_task d1")
    assert first_delegate["status"] == "deferred"  # it handed itself to a person for the child's approval


async def test_a_child_run_continued_after_its_approval_nests_under_the_resumed_delegate_call(tmp_path) -> None:
    events, found, by_id = await approved_spans(tmp_path)
    first, second = [s for s in found if s["label"] == "delegate_task d1"]
    assert first["status"] == "deferred" and second["status"] == "ok"

    def run_of(span):
        while span["kind"] != "run":
            span = by_id[span["parent"]]
        return span

    # The call's second attempt belongs to the parent's resumed run, not the paused one ...
    assert run_of(first) is not run_of(second) and "resumed" in run_of(second)["label"]
    # ... and the child's continued run (its approved clear_cache, after the deferred one) nests under it.
    clear = [s for s in found if s["label"].startswith("clear_cache")][-1]
    continued = run_of(clear)
    assert "resumed" in continued["label"] and by_id[continued["parent"]] is second
    # On the parent's bus the child's continuation follows the call's second tool.before.
    before = [i for i, e in enumerate(events) if e.type == EventTypes.TOOL_BEFORE and e.session_id == "p"]
    resumed = next(i for i, e in enumerate(events) if e.type == EventTypes.AGENT_RESUMED and e.session_id != "p")
    assert before[-1] < resumed


async def test_timeline_marks_each_compression() -> None:
    model = ScriptedModel([f"answer{i} " + "lorem " * 40 for i in range(4)])
    runtime = ark.AgentRuntime(model, compressor=ContextCompressor(
        400, keep_last=2, summarize=lambda messages: "earlier talk"))
    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe(EventTypes.ANY, events.append)
    for i in range(4):
        await runtime.run(f"question{i} " + "ipsum " * 30)
    found = spans([e.to_dict() for e in events])
    marks = [s for s in found if s["kind"] == "compression"]
    compressed = [e for e in events if e.type == EventTypes.CONTEXT_COMPRESSED]
    assert len(marks) == len(compressed) >= 1
    p = compressed[0].payload
    assert marks[0]["label"] == f"compressed {p['before_tokens']}→{p['after_tokens']} tokens"
    assert marks[0]["start"] == marks[0]["end"] and marks[0]["parent"] is not None


async def test_the_timeline_wire_carries_a_childs_parent_run_and_call(tmp_path) -> None:
    from arknb.widgets._timeline_wire import decode, encode

    parent, events = await delegated_run(tmp_path)
    items, buffers = encode(events)
    assert len(items) == 1 and "batch" in items[0]  # the column batch, not events sent whole
    assert decode(items, buffers) == [e.to_dict() for e in events]
    assert any(e.parent_call_id == "d1" for e in events) and any(e.parent_call_id is None for e in events)
