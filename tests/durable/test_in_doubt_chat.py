"""The chat shows an in-doubt call as a card with Rerun / Mark done / Mark failed, and its
buttons resolve it (Python side, with a fake front end; tests/browser has the real one)."""

from __future__ import annotations

import asyncio

import pytest

import arknb as ark
from arknb.domain import AgentMessage, ToolCall
from arknb.state import AgentState
from arknb.widgets import ChatWidget
from tests.widgets.conftest import Frontend


async def _interrupted(tmp_path) -> ark.AgentRuntime:
    """A session a crash cut short with one unanswered call, restored (file store: in doubt)."""
    storage = ark.FileStateStorage(tmp_path)
    call = ToolCall(id="c1", name="send_mail", arguments_json='{"to": "a@example.org"}')
    await storage.save(AgentState(session_id="doubt-chat", is_running=True, current_run_id="run_1", current_loop_count=1,
                                  history=(AgentMessage.user("mail it"),
                                           AgentMessage.assistant("Sending.", tool_calls=[call]))))
    sent: list[str] = []

    @ark.tool
    def send_mail(to: str) -> str:
        """Send a mail."""
        sent.append(to)
        return f"sent to {to}"

    runtime = await ark.AgentRuntime.restore("doubt-chat", storage=storage, model=ark.ScriptedModel(["Mailed."]),
                                             tools=[send_mail])
    runtime.sent = sent
    return runtime


@pytest.fixture
def chats():
    """Widgets made by a test, closed after it (an open widget stays registered, and with it its runtime)."""
    made: list[ChatWidget] = []
    yield made
    for chat in made:
        chat.close()


def _chat(runtime, made: list) -> ChatWidget:
    made.append(ChatWidget(runtime, interval=0, call_later=lambda delay, callback: None))
    return made[-1]


def _tool_status(chat: ChatWidget, call_id: str) -> str:
    [card] = [e for e in chat._transcript.entries if e["kind"] == "tool" and e["call_id"] == call_id]
    return card["status"]


async def _click(chat: ChatWidget, content: dict) -> None:
    chat._on_msg(chat, {"request_id": 1, **content})
    await asyncio.wait_for(asyncio.gather(*list(chat._tasks)), 10)  # the decision's task


async def test_an_in_doubt_call_is_a_card_of_its_kind_and_mark_done_completes_the_run(tmp_path, chats):
    runtime = await _interrupted(tmp_path)
    chat = _chat(runtime, chats)
    front = Frontend(chat)
    [card] = chat.approvals
    assert card["kind"] == "in_doubt" and card["tool_name"] == "send_mail" and card["decision"] == "pending"
    assert _tool_status(chat, "c1") == "in_doubt"  # not "awaiting approval": nobody is asked to approve it
    assert chat.input_block.startswith("a call may or may not have run")
    await _click(chat, {"type": "mark_done", "approval_id": card["approval_id"], "text": "seen in the outbox"})
    result = await asyncio.wait_for(runtime.current_run.wait(), 10) if runtime.current_run else runtime.last_result
    assert result.stop_reason == "completed" and runtime.sent == []
    assert [m.text for m in runtime.history if m.role == "tool"] == ["seen in the outbox"]
    [answer] = front.of_type("action_result")
    assert answer["ok"] and answer["action"] == "mark_done"
    assert _tool_status(chat, "c1") == "done"


async def test_rerun_from_the_card_runs_the_call_again(tmp_path, chats):
    runtime = await _interrupted(tmp_path)
    chat = _chat(runtime, chats)
    Frontend(chat)
    [card] = chat.approvals
    await _click(chat, {"type": "rerun", "approval_id": card["approval_id"]})
    result = await asyncio.wait_for(runtime.current_run.wait(), 10) if runtime.current_run else runtime.last_result
    assert result.stop_reason == "completed" and runtime.sent == ["a@example.org"]
    assert _tool_status(chat, "c1") == "done"


async def test_approve_on_an_in_doubt_card_is_refused_with_the_way_forward(tmp_path, chats):
    runtime = await _interrupted(tmp_path)
    chat = _chat(runtime, chats)
    front = Frontend(chat)
    [card] = chat.approvals
    await _click(chat, {"type": "approve", "approval_id": card["approval_id"]})
    [answer] = front.of_type("action_result")
    assert not answer["ok"] and "mark_done" in answer["error"]
    assert runtime.controller.list_in_doubt()  # still waiting for a person


async def test_cancelling_a_run_paused_in_doubt_leaves_the_card_unknown_not_not_executed(tmp_path, chats):
    """The model is told the call may have run; the card says the same (live and replayed
    from a durable store's outbox), never "not executed", which would have a person run
    it again by hand."""
    from arknb.widgets._transcript import Transcript

    from .test_crash_recovery import crash, restore

    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    chat = _chat(runtime, chats)
    assert _tool_status(chat, "c2") == "in_doubt"
    assert runtime.cancel()
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "cancelled"
    told = {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}
    assert "outcome was unknown" in told["c2"]

    replayed = Transcript()
    for event in await store.read_events("s1"):
        replayed.apply(event)
    for transcript in (chat._transcript, replayed):
        [card] = [e for e in transcript.entries if e["kind"] == "tool" and e["call_id"] == "c2"]
        assert card["status"] == "interrupted", card
        assert "not executed" not in card["result"] and "may or may not have run" in card["result"]
    await runtime.aclose()
    await store.aclose()


async def test_cancelling_a_restored_run_shows_the_call_that_had_finished_with_its_result(tmp_path, chats):
    """A call that finished before the kill is answered from its record when the restored
    run is cancelled, and its card says so (live and replayed), never "not executed" of a
    call that ran."""
    from arknb.widgets._transcript import Transcript

    from .test_crash_recovery import crash, restore

    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    chat = _chat(runtime, chats)
    assert runtime.cancel()
    assert (await asyncio.wait_for(runtime.current_run.wait(), 30)).stop_reason == "cancelled"
    told = {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}
    replayed = Transcript()
    for event in await store.read_events("s1"):
        replayed.apply(event)
    for transcript in (chat._transcript, replayed):
        [card] = [e for e in transcript.entries if e["kind"] == "tool" and e["call_id"] == "c1"]
        assert (card["status"], card["result"]) == ("done", told["c1"]), card
    await runtime.aclose()
    await store.aclose()
