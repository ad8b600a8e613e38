"""Behaviour shared by every StateStorage backend (run against memory, file and SQLite)."""

from __future__ import annotations

import pytest

from arknb.domain import AgentMessage, ArkError
from arknb.state import AgentState, FileStateStorage, MemoryStateStorage, StateStorage

from .conftest import make_full_state


def test_backends_satisfy_the_protocol(tmp_path):
    assert isinstance(MemoryStateStorage(), StateStorage)
    assert isinstance(FileStateStorage(tmp_path), StateStorage)


async def test_load_of_an_unknown_session_is_none(storage):
    assert await storage.load("nobody") is None


async def test_save_then_load_round_trips(storage, unsaved_state):
    assert await storage.save(unsaved_state) == 1
    loaded = await storage.load("demo")
    assert loaded == unsaved_state.model_copy(update={"revision": 1})
    assert loaded is not unsaved_state


async def test_save_replaces_the_previous_state(storage):
    revision = await storage.save(AgentState(session_id="s", history=(AgentMessage.user("one"),)))
    await storage.save(AgentState(session_id="s", history=(AgentMessage.user("two"),), revision=revision))
    loaded = await storage.load("s")
    assert [m.text for m in loaded.history] == ["two"] and loaded.revision == 2


async def test_loaded_states_are_read_only_and_independent_of_what_is_stored(storage):
    await storage.save(AgentState(session_id="s", metadata={"k": [1]}))
    first = await storage.load("s")
    with pytest.raises(TypeError, match="AgentState.metadata is read-only"):
        first.metadata["k"].append(2)  # the dicts and lists inside a state are frozen too
    again = await storage.load("s")
    assert again.metadata == {"k": [1]}


async def test_delete_forgets_the_session(storage, unsaved_state):
    await storage.save(unsaved_state)
    await storage.mark_not_resumable("demo")
    await storage.delete("demo")
    assert await storage.load("demo") is None
    assert await storage.list_sessions() == []
    await storage.delete("demo")  # deleting again is fine


async def test_list_sessions_is_sorted(storage):
    for session_id in ("b", "a-2", "C", "a_1"):
        await storage.save(AgentState(session_id=session_id))
    assert await storage.list_sessions() == sorted(["b", "a-2", "C", "a_1"])


async def test_mark_not_resumable_on_an_existing_session_keeps_its_state(storage, unsaved_state):
    state = unsaved_state.model_copy(update={"not_resumable": False})
    await storage.save(state)
    await storage.mark_not_resumable("demo")
    loaded = await storage.load("demo")
    assert loaded.not_resumable is True
    assert loaded.model_copy(update={"not_resumable": False}) == state.model_copy(update={"revision": 1})


async def test_mark_not_resumable_on_a_missing_session_is_remembered(storage):
    await storage.mark_not_resumable("ghost")
    loaded = await storage.load("ghost")
    assert loaded == AgentState(session_id="ghost", not_resumable=True)
    assert await storage.list_sessions() == ["ghost"]


async def test_a_later_save_decides_resumability_again(storage):
    await storage.mark_not_resumable("s")
    await storage.save(AgentState(session_id="s"))
    assert (await storage.load("s")).not_resumable is False


@pytest.mark.parametrize("bad", ["", "..", "../etc/passwd", "a/b", "a..b", ".hidden", "x" * 129,
                                 "sp ace", "nul\x00", "ünï", "a\\b"])
async def test_invalid_session_ids_are_refused(storage, bad):
    for call in (storage.load(bad), storage.mark_not_resumable(bad), storage.delete(bad),
                 storage.save(AgentState.model_construct(**{**AgentState(session_id="x").__dict__,
                                                            "session_id": bad}))):
        with pytest.raises(ArkError) as info:
            await call
        assert info.value.code == "invalid_argument" and info.value.layer == "config"
        assert repr(bad) in info.value.message


async def test_non_string_session_id_is_refused(storage):
    with pytest.raises(ArkError) as info:
        await storage.load(42)  # type: ignore[arg-type]
    assert info.value.code == "invalid_argument"


async def test_save_refuses_what_is_not_a_state(storage):
    with pytest.raises(ArkError) as info:
        await storage.save({"session_id": "s"})  # type: ignore[arg-type]
    assert info.value.code == "invalid_argument"


async def test_saved_sessions_are_listed_with_valid_ids_at_the_edges(storage):
    ids = ["a", "x" * 128, "v1.2-final_", "0"]
    for session_id in ids:
        await storage.save(make_full_state(session_id, revision=0))
    assert await storage.list_sessions() == sorted(ids)
