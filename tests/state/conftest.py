"""Fixtures for the state tests: a state with every field set to a non-default value."""

from __future__ import annotations

import pytest

from arknb.domain import (
    AgentMessage, ArkError, ContentPart, MessageOutput, ToolCall, ToolResult, ToolRisk, Usage,
)
from arknb.durable import SQLiteStore
from arknb.state import (
    AgentState, ApprovalDecision, DeniedCall, FileStateStorage, MemoryStateStorage,
    PendingApprovalBatch, PendingApprovalItem, ResolvedApproval, SavedOutputType,
)


def make_item(approval_id: str = "a1", call_id: str = "c1", *, name: str = "clear_cache",
              decision: ApprovalDecision = ApprovalDecision.PENDING) -> PendingApprovalItem:
    return PendingApprovalItem(
        approval_id=approval_id,
        tool_call=ToolCall(id=call_id, name=name, arguments_json='{"path": "/tmp/x"}', index=0),
        risk_level=ToolRisk.DANGEROUS, reason="dangerous tool", created_at=100.0,
        decision=decision)


def make_batch(*items: PendingApprovalItem) -> PendingApprovalBatch:
    if not items:
        items = (make_item("a1", "c1"), make_item("a2", "c2"))
    calls = [item.tool_call for item in items]
    safe = ToolCall(id="c9", name="add", arguments_json='{"a": 1, "b": 2}', index=len(calls))
    denied = ToolCall(id="c8", name="add", arguments_json='{"a": -1, "b": 2}', index=len(calls) + 1)
    return PendingApprovalBatch(
        batch_id="b1", run_id="r1", items=items,
        model_message=AgentMessage.assistant("Let me do that.", tool_calls=[*calls, safe, denied]),
        created_at=100.0, allowed_calls=(safe,),
        denied_calls=(DeniedCall(call=denied,
                                 result=ToolResult.from_text("negative input refused", is_error=True),
                                 reason="policy", hook="no_negatives"),))


def make_full_state(session_id: str = "demo", **update) -> AgentState:
    """A state in which no field keeps its default."""
    call = ToolCall(id="c0", name="add", arguments_json='{"a": 1, "b": 2}')
    values = dict(
        session_id=session_id,
        history=(
            AgentMessage.system("Be brief."),
            AgentMessage.user(["What is in ", ContentPart.image_url("https://example.org/cat.png")]),
            AgentMessage.assistant("Adding.", tool_calls=[call], reasoning="easy"),
            AgentMessage.tool("c0", "3"),
            AgentMessage.tool("c0", "boom", is_error=True),
            AgentMessage.user(ContentPart.image_base64("aGVsbG8=", "image/png")),
            AgentMessage.user(ContentPart.document(url="https://example.org/a.pdf", name="a.pdf")),
            AgentMessage.assistant("It is 3 — 三.").model_copy(update={  # the runtime's notes (DESIGN §17)
                "output": MessageOutput(name="Sum", json_text='{"value": 3, "note": "三"}'), "truncated": True}),
        ),
        usages=(Usage(input_tokens=10, output_tokens=5, reasoning_tokens=2, cached_tokens=1),
                Usage(input_tokens=7, output_tokens=3)),
        metadata={"owner": "workshop", "nested": {"list": [1, 2.5, None, True], "s": "ü"}},
        is_running=True, total_loop_count=7, current_loop_count=2,
        last_error=ArkError("runtime", "loop_detected", "same call 3 times").info(),
        pending_approval=make_batch(make_item("a1", "c1"),
                                    make_item("a2", "c2").decide("denied", reason="no", at=150.0)),
        not_resumable=True, current_run_id="r1", last_stop_reason="awaiting_approval",
        event_sequence=42, loop_window=("add:{}", "add:{}"), loop_forgiven=("add:{}",),
        updated_at=1234.5, revision=3,
        extensions={"plan": {"version": 1, "items": [{"content": "look", "status": "pending"}]}},
        run_output=SavedOutputType(name="Sum", schema_text='{"type":"object"}', type_path="app.models:Sum",
                                   mode="tool"),
        resolved_approvals=(ResolvedApproval(approval_id="a0", batch_id="b0", call_id="c0", tool_name="rm",
                                             decision=ApprovalDecision.DENIED, deny_reason="no", decided_at=99.0),),
    )
    values.update(update)
    return AgentState(**values)


@pytest.fixture
def full_state() -> AgentState:
    return make_full_state()


@pytest.fixture
def unsaved_state() -> AgentState:
    """The full state as a store has never seen it (revision 0), ready for a first save."""
    return make_full_state(revision=0)


@pytest.fixture(params=["memory", "file", "sqlite"])
def storage(request, tmp_path):
    """Each backend in turn: the behaviour the runtime relies on is the same for all."""
    if request.param == "memory":
        yield MemoryStateStorage()
    elif request.param == "file":
        yield FileStateStorage(tmp_path / "sessions")
    else:
        store = SQLiteStore(tmp_path / "sessions" / "state.sqlite3")
        yield store
        store.close()
