"""A cold SQLite load (a new process: no known or validated rows) reads the header and the
rows in one parse each, and refuses a NaN, an infinity or ``1e400`` hidden in a message
row, a usage row or the header exactly as the two-parse way did (restore cost, issue 11).

Two sizes: a short history is validated row by row, a long one (most rows unknown) as one
spliced document; both ways must refuse, with the error the two-parse way gives.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest

from arknb.domain import AgentMessage, ArkError, ToolCall
from arknb.durable import SQLiteStore, _validated_rows
from arknb.durable._known_rows import KNOWN_ROWS
from arknb.durable._validated_rows import VALIDATED_ROWS
from arknb.state import agent_state
from tests.state.conftest import make_full_state

EDITS = {
    "tool_call_index": ("messages", 2, '"index":0', '"index":NaN'),
    "content_text": ("messages", 3, '"text":"3"', '"text":Infinity'),
    "unknown_field_in_a_message": ("messages", 1, '"is_error":false', '"is_error":false,"x":-Infinity'),
    "usage": ("usages", 0, '"input_tokens":10', '"input_tokens":1e400'),
    "usage_float": ("usages", 1, '"output_tokens":3', '"output_tokens":1' + "0" * 309 + ".5"),
    "header_metadata": ("sessions", None, '"owner":"workshop"', '"owner":NaN'),
    "header_extension": ("sessions", None, '"version":1', '"version":1e400'),
    "header_time": ("sessions", None, '"updated_at":1234.5', '"updated_at":-Infinity'),
}


def _state(turns: int):
    state = make_full_state(revision=0)
    extra: tuple = ()
    for n in range(turns):
        call = ToolCall(id=f"t{n}", name="add", arguments_json=f'{{"a": {n}}}')
        extra += (AgentMessage.assistant("adding", tool_calls=[call]), AgentMessage.tool(f"t{n}", "5"))
    return state.model_copy(update={"history": state.history + extra})


def _edit(db, kind: str) -> None:
    table, idx, old, new = EDITS[kind]
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        column = "header" if table == "sessions" else "body"
        where = "" if idx is None else f" AND idx = {idx}"
        changed = conn.execute(f"UPDATE {table} SET {column} = replace({column}, ?, ?) "
                               f"WHERE session_id = 'demo'{where} AND instr({column}, ?) > 0",
                               (old, new, old)).rowcount
    assert changed == 1, f"the edit {kind} found nothing to change"


async def _cold_load_error(db) -> ArkError:
    KNOWN_ROWS.clear()  # as a new process
    VALIDATED_ROWS.clear()
    store = SQLiteStore(db)
    try:
        with pytest.raises(ArkError) as info:
            await store.load("demo")
    finally:
        await store.aclose()
    return info.value


@pytest.mark.parametrize("turns", [0, 60], ids=["row_by_row", "whole_document"])
@pytest.mark.parametrize("kind", sorted(EDITS))
async def test_a_nonfinite_number_in_a_row_or_the_header_is_refused_on_a_cold_load(tmp_path, monkeypatch,
                                                                                   kind, turns):
    db = tmp_path / "state.sqlite3"
    store = SQLiteStore(db)
    await store.save(_state(turns))
    await store.aclose()
    _edit(db, kind)
    before = db.read_bytes()

    error = await _cold_load_error(db)

    assert error.code == "state_corrupt" and error.layer == "storage" and "'demo'" in error.message
    assert db.read_bytes() == before
    with monkeypatch.context() as patch:  # the two-parse way gives the same error
        patch.setattr(agent_state, "_one_parse", False)
        patch.setattr(_validated_rows, "_ONE_PARSE", dict.fromkeys(_validated_rows._ONE_PARSE, False))
        assert (await _cold_load_error(db)).message == error.message


@pytest.mark.parametrize("turns", [0, 60], ids=["row_by_row", "whole_document"])
async def test_a_cold_load_reads_what_was_saved(tmp_path, turns):
    db = tmp_path / "state.sqlite3"
    state = _state(turns)
    store = SQLiteStore(db)
    await store.save(state)
    await store.aclose()
    KNOWN_ROWS.clear()
    VALIDATED_ROWS.clear()
    store = SQLiteStore(db)
    loaded = await store.load("demo")
    await store.aclose()
    assert loaded == state.model_copy(update={"revision": 1})
    assert len(VALIDATED_ROWS) == len(set(m.model_dump_json() for m in state.history)) + len(
        set(u.model_dump_json() for u in state.usages))
