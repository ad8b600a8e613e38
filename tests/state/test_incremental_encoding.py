"""The file storage's incremental encoder writes what to_json() would, however history changes."""

from __future__ import annotations

import json

from arknb.domain import AgentMessage, ToolCall
from arknb.state import AgentState, FileStateStorage
from arknb.state._encoding import IncrementalStateEncoder


def _state(history: tuple) -> AgentState:
    return AgentState(session_id="s", history=history, metadata={"k": [1, 2]}, event_sequence=7)


def test_encoding_parses_to_the_same_state_as_to_json_as_history_grows() -> None:
    encoder = IncrementalStateEncoder()
    history: tuple = ()
    for i in range(5):
        history = history + (AgentMessage.user(f"q{i}"),
                             AgentMessage.assistant(f"a{i}", tool_calls=[ToolCall(id=f"c{i}", name="t")]),
                             AgentMessage.tool(f"c{i}", "ok"))
        state = _state(history)
        text = encoder.encode(state)
        assert json.loads(text) == json.loads(state.to_json())
        assert AgentState.from_json(text) == state


def test_encoding_follows_a_history_that_was_replaced_not_appended() -> None:
    encoder = IncrementalStateEncoder()
    first = (AgentMessage.user("a"), AgentMessage.assistant("b"), AgentMessage.user("c"))
    encoder.encode(_state(first))
    rewritten = (first[0], AgentMessage.assistant("B, edited"), AgentMessage.user("c"))
    assert AgentState.from_json(encoder.encode(_state(rewritten))) == _state(rewritten)
    shorter = (first[0],)
    assert AgentState.from_json(encoder.encode(_state(shorter))) == _state(shorter)
    assert AgentState.from_json(encoder.encode(_state(()))) == _state(())


async def test_file_storage_round_trips_successive_saves(tmp_path) -> None:
    storage = FileStateStorage(tmp_path)
    history: tuple = ()
    revision = 0
    for i in range(3):
        history = history + (AgentMessage.user(f"q{i}"),)
        state = _state(history).model_copy(update={"revision": revision})
        revision = await storage.save(state)
        assert await storage.load("s") == state.model_copy(update={"revision": revision})
    await storage.delete("s")
    assert await storage.load("s") is None
    await storage.save(_state(history[:1]))
    assert await storage.load("s") == _state(history[:1]).model_copy(update={"revision": 1})


def test_usages_are_encoded_incrementally_and_round_trip() -> None:
    from arknb.domain import Usage

    encoder = IncrementalStateEncoder()
    usages: tuple = ()
    for i in range(4):
        usages = usages + (Usage(input_tokens=i, output_tokens=2 * i),)
        state = AgentState(session_id="s", usages=usages)
        assert AgentState.from_json(encoder.encode(state)) == state
    assert encoder._fields["usages"].items == list(usages)
    replaced = AgentState(session_id="s", usages=(Usage(input_tokens=9),))
    assert AgentState.from_json(encoder.encode(replaced)) == replaced


def test_only_new_items_are_encoded() -> None:
    from arknb.state._encoding import AppendOnlyFragments

    fragments = AppendOnlyFragments()
    first = (AgentMessage.user("a"), AgentMessage.user("b"))
    assert fragments.update(first) == 0
    assert fragments.update(first + (AgentMessage.user("c"),)) == 2
    # An equal but different object counts as changed: identity, not equality.
    assert fragments.update((first[0], AgentMessage.user("b"))) == 1
    assert fragments.fragments == [m.model_dump_json() for m in (first[0], AgentMessage.user("b"))]
