"""AgentState: JSON round-trip, immutability, helpers, and clear errors on bad documents."""

from __future__ import annotations

import json

import pydantic
import pytest

from arknb.domain import AgentMessage, ArkError, Usage
from arknb.state import (
    SCHEMA_VERSION, AgentState, ApprovalDecisionResult, DeniedCall, PendingApprovalBatch,
    PendingApprovalItem,
)

from .conftest import make_batch, make_item


def test_json_round_trip_of_a_state_with_every_field_set(full_state):
    for name, field in AgentState.model_fields.items():
        if name != "schema_version":
            assert getattr(full_state, name) != field.get_default(call_default_factory=True), name
    again = AgentState.from_json(full_state.to_json())
    assert again == full_state
    assert again.to_json() == full_state.to_json()


def test_json_round_trip_of_a_default_state():
    state = AgentState(session_id="s")
    assert AgentState.from_json(state.to_json()) == state
    assert state.schema_version == SCHEMA_VERSION == 3


@pytest.mark.parametrize("value", [
    make_item(),
    make_item().decide("denied", reason="no", at=2.0),
    make_batch(),
    make_batch().denied_calls[0],
    ApprovalDecisionResult.success("a1", "approved", True),
    ApprovalDecisionResult.failure("a1", ArkError("runtime", "approval_not_found", "gone")),
], ids=lambda v: type(v).__name__)
def test_json_round_trip_of_approval_values(value):
    assert type(value).model_validate_json(value.model_dump_json()) == value


def test_state_is_frozen_and_copied_with_model_copy(full_state):
    with pytest.raises(pydantic.ValidationError):
        full_state.is_running = False  # type: ignore[misc]
    longer = full_state.model_copy(update={"history": full_state.history + (AgentMessage.user("hi"),)})
    assert len(longer.history) == len(full_state.history) + 1
    # Structure is shared, not copied: snapshots are free.
    assert longer.history[0] is full_state.history[0]
    assert longer.pending_approval is full_state.pending_approval


def test_history_is_a_tuple_even_when_given_a_list():
    messages = [AgentMessage.user("a")]
    state = AgentState(session_id="s", history=messages)
    messages.append(AgentMessage.user("b"))
    assert isinstance(state.history, tuple) and len(state.history) == 1


def test_total_usage_sums_usages(full_state):
    assert full_state.total_usage == Usage(input_tokens=17, output_tokens=8, reasoning_tokens=2,
                                           cached_tokens=1)
    assert AgentState(session_id="s").total_usage == Usage()


def test_state_has_no_field_for_runtime_objects_or_secrets():
    for name in AgentState.model_fields:
        assert not any(word in name for word in ("client", "tool_registry", "hook", "listener",
                                                 "token", "secret", "api_key"))


@pytest.mark.parametrize("text, fragment", [
    ('{"session_id": "s", "history": [', "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"session_id": "s", "history": "oops"}', "history"),
    ('{"session_id": "s", "total_loop_count": "many"}', "total_loop_count"),
    ('{"session_id": "s", "history": [{"role": "tool", "contents": []}]}', "history.0"),
    ('{"history": []}', "session_id"),
    ('{"session_id": "s", "schema_version": "2"}', "schema_version"),
])
def test_bad_documents_are_state_corrupt_naming_the_source(text, fragment):
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text, source="notes/demo.json")
    assert info.value.code == "state_corrupt" and info.value.layer == "storage"
    assert "notes/demo.json" in info.value.message and fragment in info.value.message


def test_corrupt_error_does_not_quote_the_bad_values():
    text = json.dumps({"session_id": "s", "total_loop_count": "sk-supersecretvalue1234567"})
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text)
    assert "sk-supersecretvalue" not in info.value.message


def test_newer_schema_version_is_refused():
    text = json.dumps({"schema_version": SCHEMA_VERSION + 1, "session_id": "s"})
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text, source="/tmp/x.json")
    assert info.value.code == "state_version_unsupported" and info.value.layer == "storage"
    assert str(SCHEMA_VERSION + 1) in info.value.message and "/tmp/x.json" in info.value.message


def test_public_names_are_exported():
    import arknb.state as state
    for name in state.__all__:
        assert hasattr(state, name)
    for cls in (AgentState, PendingApprovalBatch, PendingApprovalItem, DeniedCall):
        assert getattr(state, cls.__name__) is cls



def test_state_package_imports_only_domain():
    # Static check: `import arknb.state` also runs arknb/__init__.py, which re-exports
    # the whole package, so sys.modules cannot tell what arknb.state itself needs.
    import ast
    from pathlib import Path

    import arknb.state
    for path in Path(arknb.state.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("arknb"):
                    assert name.startswith("arknb.domain"), f"{path.name} imports {name}"
