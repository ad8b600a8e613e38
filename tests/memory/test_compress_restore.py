"""Compression survives SIGKILL on SQLiteStore: a session compressed in the run a crash
interrupted (while it waited for an approval) is restored in a new process with its
summaries, continues, and never summarises a range twice or runs a finished tool again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import arknb as ark
from arknb import ScriptedTurn, ToolCall

from ._compress_kit import SESSION, compressor, lines, tools
from ..runtime._approval_kit import run_until_line

CHILD = Path(__file__).with_name("_compress_child.py")


async def test_a_compressed_session_killed_while_awaiting_approval_restores_with_its_summaries(tmp_path) -> None:
    line = run_until_line(CHILD, str(tmp_path), prefix="AWAITING ")
    _, session, approval_id = line.split()
    asked_before = lines(tmp_path, "summaries.log")
    assert asked_before and lines(tmp_path, "effects.log") == []

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    model = ark.ScriptedModel(["The logs are archived."])
    runtime = await ark.AgentRuntime.restore(session, storage=store, model=model, tools=tools(tmp_path),
                                             compressor=compressor(tmp_path))
    try:
        saved = runtime.state.context_summaries
        assert saved and len(saved) == len(asked_before)  # every summary made before the kill was saved
        decided = await runtime.controller.approve(approval_id)
        assert decided.ok
        result = await asyncio.wait_for(runtime.current_run.wait(), 60)
        assert result.stop_reason == "completed" and result.text == "The logs are archived."
        assert lines(tmp_path, "effects.log") == ["archived 30"]  # the approved call, once

        summaries = runtime.state.context_summaries
        # Reused, not rewritten: the saved ones are still there, and each summariser call made one.
        assert [s.summary_id for s in summaries[:len(saved)]] == [s.summary_id for s in saved]
        assert len(lines(tmp_path, "summaries.log")) == len(summaries)
        assert len({(s.start, s.end) for s in summaries}) == len(summaries)
        # The raw history is whole; the request after the restore was compressed from it.
        history = runtime.state.history
        assert [m.text.split()[0] for m in history if m.role == "user"] == [f"question{i}" for i in range(4)]
        assert [m.tool_call_id for m in history if m.role == "tool"] == ["a1"]
        request = model.requests[-1]
        assert request.messages[0].text.startswith("[Summary of the first")
        assert request.messages[-1].role == "tool" and request.messages[-1].tool_call_id == "a1"
        # Every model call's operation completed; the tool's ran once.
        operations = await store.list_operations(SESSION)
        assert all(o.completed for o in operations)
        assert [o.purpose_key.rsplit(":", 1)[1] for o in operations if o.kind == "tool_call"] == ["a1"]
    finally:
        await runtime.aclose()
        await store.aclose()


async def test_a_run_killed_while_its_summary_is_written_resumes_and_summarises_once_more(tmp_path) -> None:
    """Killed inside the summariser: nothing of that compression was saved, so the resumed
    run compresses again (one more summariser call) and goes on; history is whole."""
    run_until_line(CHILD, str(tmp_path), "hang", prefix="SUMMARIZING")
    assert len(lines(tmp_path, "summaries.log")) == 1

    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    model = ark.ScriptedModel([ScriptedTurn(text="Archiving the logs.", tool_calls=[ToolCall(
        id="a1", name="archive_logs", arguments_json='{"days": 30}', index=0)]), "The logs are archived."])
    runtime = await ark.AgentRuntime.restore(SESSION, storage=store, model=model, tools=tools(tmp_path),
                                             compressor=compressor(tmp_path))
    try:
        assert runtime.state.context_summaries == ()  # the killed compression left nothing behind
        result = await asyncio.wait_for(runtime.resume(), 60)
        assert result.stop_reason == "awaiting_approval"
        [item] = runtime.controller.list_pending_approvals()
        assert (await runtime.controller.approve(item.approval_id)).ok
        result = await asyncio.wait_for(runtime.current_run.wait(), 60)
        assert result.stop_reason == "completed" and lines(tmp_path, "effects.log") == ["archived 30"]
        summaries = runtime.state.context_summaries
        assert summaries and len(lines(tmp_path, "summaries.log")) == 1 + len(summaries)
        assert model.requests[0].messages[0].text.startswith("[Summary of the first")
        users = [m.text.split()[0] for m in runtime.state.history if m.role == "user"]
        assert users == [f"question{i}" for i in range(4)]
    finally:
        await runtime.aclose()
        await store.aclose()
