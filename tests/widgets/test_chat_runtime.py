"""The chat on real AgentRuntimes sharing saved sessions (issue 10 items 2-4, 11): a chat
on a runtime built for a saved session shows it once loaded, a replaced runtime's chat
is detached and runs nothing, and a card decided by another runtime shows that decision."""

import asyncio
import sys

import arknb as ark
from arknb.widgets import ChatWidget

from .chat_front import ChatFront

RAN: list[str] = []


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    RAN.append(path)
    return f"cleared {path}"


def scripted():
    return ark.ScriptedModel([
        ark.ScriptedTurn(text="Clearing.", tool_calls=[
            ark.ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/tmp/x"}')]),
        ark.ScriptedTurn(text="Done."),
    ])


async def settle():
    for _ in range(20):
        await asyncio.sleep(0.02)


async def test_a_chat_for_a_saved_session_shows_it_once_loaded_and_once_only(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(scripted(), tools=[clear_cache], storage=storage, session_id="s")
    assert (await first.run("clear it")).stop_reason == "awaiting_approval"
    again = ark.AgentRuntime(scripted(), tools=[clear_cache], storage=storage, session_id="s")
    chat = ChatWidget(again)
    front = ChatFront(chat)
    assert chat.status == "loading"
    await settle()
    entries = chat.transcript["entries"]
    assert [(e["kind"], e.get("text")) for e in entries][:2] == [("user", "clear it"), ("assistant", "Clearing.")]
    assert [e["kind"] for e in entries].count("assistant") == 1  # the pending batch's message is not repeated
    assert chat.status == "awaiting_approval" and [a["live"] for a in chat.approvals] == [True]
    assert front.entries == entries
    chat.close()


async def test_the_replaced_runtimes_chat_is_detached_and_its_card_runs_nothing(tmp_path):
    RAN.clear()
    storage = ark.FileStateStorage(tmp_path)
    old = ark.AgentRuntime(scripted(), tools=[clear_cache], storage=storage, session_id="s")
    assert (await old.run("clear it")).stop_reason == "awaiting_approval"
    old_chat = ChatWidget(old)
    front = ChatFront(old_chat)
    (card,) = old_chat.approvals
    new = ark.AgentRuntime(scripted(), tools=[clear_cache], storage=storage, session_id="s")  # takes over
    await settle()
    assert old_chat.detached.startswith("A newer chat took over this session")
    assert [a["live"] for a in old_chat.approvals] == [False]
    old_chat._on_msg(old_chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "q"})
    await settle()
    assert front.of_type("action_result")[-1]["ok"] is False and RAN == []

    new_chat = ChatWidget(new)
    await settle()
    (live,) = new_chat.approvals
    assert live["live"] and live["approval_id"] == card["approval_id"]
    new_chat._on_msg(new_chat, {"type": "approve", "approval_id": live["approval_id"], "request_id": "q2"})
    await settle()
    while new.is_running:
        await asyncio.sleep(0.01)
    assert RAN == ["/tmp/x"]
    # The stale chat still runs nothing, and a second click on the new one neither.
    old_chat._on_msg(old_chat, {"type": "approve", "approval_id": card["approval_id"]})
    new_chat._on_msg(new_chat, {"type": "approve", "approval_id": live["approval_id"], "request_id": "q3"})
    await settle()
    assert RAN == ["/tmp/x"]
    old_chat.close()
    new_chat.close()


OTHER_PROCESS = """
import asyncio, sys
import arknb as ark

@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    \"\"\"Delete a cache folder.\"\"\"
    raise SystemExit("the other process must not run the call either")

async def main():
    rt = ark.AgentRuntime(ark.ScriptedModel(["Understood."]), tools=[clear_cache],
                          storage=ark.FileStateStorage(sys.argv[1]), session_id="s")
    await rt.load()
    (item,) = rt.controller.list_pending_approvals()
    result = await rt.controller.deny(item.approval_id, "not today")
    assert result.ok, result
    if rt.current_run is not None:
        await rt.current_run

asyncio.run(main())
"""


async def test_a_decision_made_in_another_process_shows_on_the_card_and_runs_nothing_here(tmp_path):
    RAN.clear()
    here = ark.AgentRuntime(scripted(), tools=[clear_cache], storage=ark.FileStateStorage(tmp_path), session_id="s")
    assert (await here.run("clear it")).stop_reason == "awaiting_approval"
    chat = ChatWidget(here)
    front = ChatFront(chat)
    (card,) = chat.approvals
    script = tmp_path / "other.py"
    script.write_text(OTHER_PROCESS)
    other = await asyncio.create_subprocess_exec(sys.executable, str(script), str(tmp_path))
    assert await other.wait() == 0
    # This process still holds the batch in memory; its card looks live until it acts.
    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "q"})
    await settle()
    result = front.of_type("action_result")[-1]
    assert result["ok"] is False and "state_conflict" in result["error"]
    assert RAN == [] and not here.is_running
    (after,) = chat.approvals
    assert after["live"] is False and "another runtime" in after["note"]
    chat._on_msg(chat, {"type": "approve", "approval_id": card["approval_id"], "request_id": "q2"})
    await settle()
    assert front.of_type("action_result")[-1]["ok"] is False and RAN == []
    chat.close()
