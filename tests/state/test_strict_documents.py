"""Saved states are read strictly (DESIGN §8, issue 10 item 10): nothing is guessed.

A hand-edited or damaged document is ``state_corrupt`` naming the problem, never a
coerced value, a silently dropped field or a raw ``RecursionError``; the file is left
as it is. Checked on the parser and through the file and SQLite stores.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from arknb.domain import ArkError
from arknb.durable import SQLiteStore
from arknb.state import AgentState, FileStateStorage

from .conftest import make_full_state


def _doc(**changes) -> str:
    document = json.loads(make_full_state("s").to_json())
    document.update(changes)
    return json.dumps(document)


def _refused(text: str | bytes) -> ArkError:
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text, source="session 's' (test)")
    assert info.value.code == "state_corrupt" and info.value.layer == "storage"
    assert "session 's' (test)" in info.value.message
    return info.value


@pytest.mark.parametrize("field, value", [
    ("is_running", "yes"), ("is_running", 1), ("total_loop_count", "3"), ("total_loop_count", 3.0),
    ("event_sequence", True), ("revision", "2"), ("updated_at", "1234.5"), ("session_id", 7),
    ("not_resumable", "false"), ("loop_window", "add:{}"),
])
def test_no_value_is_coerced(field, value):
    error = _refused(_doc(**{field: value}))
    assert field in error.message


def test_nested_values_are_not_coerced_either():
    document = json.loads(_doc())
    document["history"][2]["tool_calls"][0]["index"] = "0"
    document["pending_approval"]["items"][0]["created_at"] = "100"
    error = _refused(json.dumps(document))
    assert "history.2.tool_calls.0.index" in error.message
    assert "pending_approval.items.0.created_at" in error.message


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(constant):
    text = _doc(updated_at=0.0).replace('"updated_at": 0.0', f'"updated_at": {constant}')
    assert constant in text
    error = _refused(text)
    assert constant in error.message


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e999"])
def test_a_number_too_large_to_be_anything_but_infinity_is_refused(number):
    # json reads 1e400 as inf, which the next save would write as null: a silent change.
    error = _refused(_doc().replace('"owner": "workshop"', f'"owner": {number}'))
    assert "too large" in error.message
    assert "too large" in _refused(_doc(updated_at=0.5).replace('"updated_at": 0.5', f'"updated_at": {number}')).message


def test_nan_inside_metadata_is_refused():
    error = _refused(_doc().replace('"owner": "workshop"', '"owner": NaN'))
    assert "NaN" in error.message


def test_an_unknown_field_is_refused_by_name():
    error = _refused(_doc(colour="blue"))
    assert "colour: unknown field" in error.message


def test_an_unknown_nested_field_is_refused_by_its_path():
    document = json.loads(_doc())
    document["pending_approval"]["items"][0]["priority"] = "high"
    document["history"][0]["mood"] = "calm"
    error = _refused(json.dumps(document))
    assert "pending_approval.items.0.priority: unknown field" in error.message
    assert "history.0.mood: unknown field" in error.message


@pytest.mark.parametrize("depth", [300, 100_000])
def test_deep_nesting_is_state_corrupt_never_a_recursion_error(depth):
    text = _doc(metadata={}).replace('"metadata": {}', '"metadata": ' + "[" * depth + "]" * depth)
    error = _refused(text)
    assert "nested too deeply" in error.message


def test_a_utf8_byte_order_mark_is_accepted():
    state = make_full_state("s")
    text = state.to_json()
    assert AgentState.from_json("\ufeff" + text) == state
    assert AgentState.from_json(b"\xef\xbb\xbf" + text.encode("utf-8")) == state


def test_the_error_never_quotes_the_values():
    """A corrupt document may hold anything, a key included: the error names places only."""
    error = _refused(_doc(is_running="sk-proj-abcdefghijklmnop1234567890"))
    assert "sk-proj" not in error.message


def test_a_strict_reader_still_reads_everything_arknb_writes():
    state = make_full_state("s")
    assert AgentState.from_json(state.to_json()) == state
    assert AgentState.from_json(state.to_json().encode("utf-8")) == state


# -- through the stores --------------------------------------------------------------------------

HAND_EDITS = {
    "coerced": lambda: _doc(is_running="yes"),
    "nan": lambda: _doc().replace('"owner": "workshop"', '"owner": NaN'),
    "overflow": lambda: _doc().replace('"owner": "workshop"', '"owner": 1e400'),
    "unknown_field": lambda: _doc(colour="blue"),
    "deep": lambda: _doc(metadata={}).replace('"metadata": {}', '"metadata": ' + "[" * 50_000 + "]" * 50_000),
}


@pytest.mark.parametrize("kind", sorted(HAND_EDITS))
async def test_file_store_refuses_hand_edits_and_leaves_the_file(tmp_path, kind):
    storage = FileStateStorage(tmp_path)
    path = tmp_path / "s.json"
    path.write_text(HAND_EDITS[kind](), "utf-8")
    before = path.read_bytes()
    with pytest.raises(ArkError) as info:
        await storage.load("s")
    assert info.value.code == "state_corrupt" and str(path) in info.value.message
    assert path.read_bytes() == before


async def test_file_store_accepts_a_byte_order_mark(tmp_path):
    storage = FileStateStorage(tmp_path)
    state = make_full_state("s", revision=0)
    await storage.save(state)
    path = tmp_path / "s.json"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # an editor saved it with a BOM
    loaded = await storage.load("s")
    assert loaded == state.model_copy(update={"revision": 1})
    assert await storage.save(loaded) == 2  # and the next save reads its revision through the BOM


@pytest.mark.parametrize("edit, needle", [
    ("json_set(header, '$.is_running', 'yes')", "is_running"),
    ("json_set(header, '$.colour', 'blue')", "colour: unknown field"),
])
async def test_sqlite_store_refuses_hand_edits(tmp_path, edit, needle):
    db = tmp_path / "s.db"
    storage = SQLiteStore(db)
    await storage.save(make_full_state("s", revision=0))
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE sessions SET header = {edit}")
    with pytest.raises(ArkError) as info:
        await storage.load("s")
    await storage.aclose()
    assert info.value.code == "state_corrupt" and needle in info.value.message and str(db) in info.value.message


# -- a save never overwrites what a load would refuse ------------------------------------


def _edit_file(path, **changes) -> None:
    document = json.loads(path.read_text("utf-8"))
    document.update(changes)
    path.write_text(json.dumps(document), "utf-8")


def _edit_header(db, **changes) -> None:
    with sqlite3.connect(db) as conn:
        header = json.loads(conn.execute("SELECT header FROM sessions").fetchone()[0])
        header.update(changes)
        conn.execute("UPDATE sessions SET header = ?", (json.dumps(header),))


@pytest.mark.parametrize("store", ["file", "sqlite"])
@pytest.mark.parametrize("edit", [{"colour": "blue"}, {"is_running": "yes"}])
async def test_a_save_at_the_stored_revision_refuses_a_state_edited_by_hand_since(tmp_path, store, edit):
    """The revision still matches (a hand edit keeps it), but the stored state is one a load
    refuses: the save leaves it as it is (issue 10: unknown fields were dropped, wrong types
    overwritten by the next save of a runtime that had loaded the session before the edit)."""
    if store == "file":
        storage, path = FileStateStorage(tmp_path), tmp_path / "s.json"
    else:
        storage, path = SQLiteStore(tmp_path / "s.db"), tmp_path / "s.db"
    await storage.save(make_full_state("s", revision=0))
    loaded = await storage.load("s")   # the instance knows the stored state now
    if store == "file":
        _edit_file(path, **edit)
        before = path.read_bytes()
    else:
        _edit_header(path, **edit)
    with pytest.raises(ArkError) as info:
        await storage.save(loaded)
    if store == "sqlite":
        await storage.aclose()
        with sqlite3.connect(path) as conn:
            header = json.loads(conn.execute("SELECT header FROM sessions").fetchone()[0])
        assert all(header[key] == value for key, value in edit.items())
    else:
        assert path.read_bytes() == before
    assert info.value.code == "state_corrupt" and next(iter(edit)) in info.value.message
    assert "the save was refused" in info.value.message and "fresh=True" in info.value.message
