"""A saved batch whose items are all decided but which is still pending (the runtime
never saves one: a hand-edited or foreign state) is resolved when the session is loaded,
as after its last decision, instead of leaving a session that lists nothing and refuses
every input (issue 26 item 7). On a durable store as on a file store."""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb.state import ApprovalDecision


def _wipe_tool(ran: list):
    @ark.tool(risk="dangerous")
    def wipe(path: str) -> str:
        """Delete a folder."""
        ran.append(path)
        return f"wiped {path}"

    return wipe


def _model(*after: str) -> ark.ScriptedModel:
    return ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[
        ark.ToolCall(id="c1", name="wipe", arguments_json='{"path": "/a"}'),
        ark.ToolCall(id="c2", name="wipe", arguments_json='{"path": "/b"}', index=1)]), *after])


def _decide_by_hand(state: ark.AgentState, decisions: dict[str, str]) -> ark.AgentState:
    batch = state.pending_approval
    items = tuple(item.model_copy(update={"decision": ApprovalDecision(decisions[item.tool_call.id]),
                                              "decided_at": 1.0})
                  for item in batch.items)
    return state.model_copy(update={"pending_approval": batch.model_copy(update={"items": items})})


def _store(kind: str, tmp_path, request):
    if kind == "file":
        return ark.FileStateStorage(tmp_path / "states")
    if kind == "sqlite":
        return ark.SQLiteStore(tmp_path / "s.db")
    return ark.PostgresStore(request.getfixturevalue("pg_dsn"))


@pytest.mark.parametrize("kind", ["file", "sqlite", "postgres"])
async def test_a_saved_batch_with_every_item_decided_is_resolved_on_load(kind, tmp_path, request):
    ran: list[str] = []
    store = _store(kind, tmp_path, request)
    first = ark.AgentRuntime(_model(), tools=[_wipe_tool(ran)], storage=store, session_id="s1")
    assert (await first.run("wipe both")).stop_reason == "awaiting_approval"
    edited = _decide_by_hand(first.state, {"c1": "approved", "c2": "denied"})
    await first.aclose()
    await store.save(edited.model_copy(update={"revision": (await store.load("s1")).revision}))

    restored = await ark.AgentRuntime.restore("s1", storage=store, model=ark.ScriptedModel(["wiped /a only"]),
                                              tools=[_wipe_tool(ran)])
    try:
        assert restored.controller.list_pending_approvals() == []
        assert restored.current_run is not None, "the decided batch was not continued"
        result = await restored.current_run.wait()
        assert (result.stop_reason, result.final_message.text) == ("completed", "wiped /a only")
        assert ran == ["/a"]
        answers = {m.tool_call_id: m.text for m in restored.history if m.role == "tool"}
        assert answers["c1"] == "wiped /a" and "denied" in answers["c2"].lower()
        # and the session takes new input again
        assert (await restored.run("thanks")).stop_reason in ("completed", "failed")
    finally:
        await restored.aclose()
        if hasattr(store, "aclose"):
            await store.aclose()


async def test_a_hand_edited_decided_batch_in_a_state_file_is_resolved_too(tmp_path):
    ran: list[str] = []
    folder = tmp_path / "states"
    first = ark.AgentRuntime(_model(), tools=[_wipe_tool(ran)], storage=ark.FileStateStorage(folder),
                             session_id="s1")
    assert (await first.run("wipe both")).stop_reason == "awaiting_approval"
    await first.aclose()
    [path] = folder.glob("*.json")
    data = json.loads(path.read_text())
    for item in data["pending_approval"]["items"]:
        item["decision"], item["decided_at"] = "denied", 1.0
    path.write_text(json.dumps(data))
    restored = await ark.AgentRuntime.restore("s1", storage=ark.FileStateStorage(folder),
                                              model=ark.ScriptedModel(["nothing wiped", "ok"]),
                                              tools=[_wipe_tool(ran)])
    await restored.current_run.wait()
    assert ran == [] and restored.state.pending_approval is None
    assert (await restored.run("next")).stop_reason == "completed"
    await restored.aclose()
