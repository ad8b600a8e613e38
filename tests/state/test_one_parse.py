"""``AgentState.from_json`` reads a current document in one parse (restore cost, issue 11),
refusing exactly what the two-parse way refused, with the same errors.

pydantic's JSON parser reads NaN, Infinity and ``1e400`` as the floats nan and inf, so
the one-parse way is sound only if every place of the schema that could take such a
float is checked: the float fields refuse them (``allow_inf_nan=False``) and the JSON
fields are walked (``arknb/state/_finite.py``). These tests pin that list and hide each
non-finite number in each place; the error must be the one the two-parse way gives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from arknb.domain import AgentMessage, ArkError, ContentPart, Usage
from arknb.state import AgentState, PendingApprovalItem
from arknb.state import agent_state
from arknb.state._finite import holds_nonfinite, open_positions
from arknb.state.agent_state import current_document

from .conftest import make_full_state

NONFINITE = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1.5e999", "1" + "0" * 309 + ".0"]

_HERE = "__nonfinite_goes_here__"


def _document() -> dict[str, Any]:
    state = make_full_state("s")
    batch = state.pending_approval
    items = (batch.items[0].model_copy(update={"detail": {"plan": {"items": [{"weight": 0.5}]}},
                                               "started_at": 120.0}), batch.items[1])
    state = state.model_copy(update={"pending_approval": batch.model_copy(update={"items": items}),
                                     "extensions": {"plan": {"version": 1, "items": []},
                                                    "other": {"deep": [[{"x": 2.5}]]}}})
    return json.loads(state.to_json())


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = [int(step) if step.isdigit() else step for step in path.split(".")]
    target: Any = doc
    for step in parents:
        target = target[step]
    target[last] = value


PLACES = [
    # JSON fields (walked)
    "metadata.owner", "metadata.nested.list.1", "extensions.plan.version", "extensions.other.deep.0.0.x",
    "pending_approval.items.0.detail.plan.items.0.weight",
    # float fields (allow_inf_nan=False)
    "updated_at", "pending_approval.created_at", "pending_approval.items.0.created_at",
    "pending_approval.items.1.decided_at", "pending_approval.items.0.started_at", "resolved_approvals.0.decided_at",
    # fields of other types, and fields this arknb does not know
    "usages.0.input_tokens", "history.2.tool_calls.0.index", "history.0.contents.0.text", "is_running",
    "history.3.tool_call_id", "colour", "history.1.mood", "pending_approval.items.0.priority",
]


def _text_with(place: str, number: str) -> str:
    doc = _document()
    _set(doc, place, _HERE)
    text = json.dumps(doc)
    assert text.count(f'"{_HERE}"') == 1
    return text.replace(f'"{_HERE}"', number)


def _two_parse_error(text: str, monkeypatch) -> ArkError:
    with monkeypatch.context() as patch:
        patch.setattr(agent_state, "_one_parse", False)
        with pytest.raises(ArkError) as info:
            AgentState.from_json(text, source="session 's' (test)")
    return info.value


def test_the_places_a_nonfinite_number_could_hide_are_the_ones_checked():
    """A field added later that takes a float or any JSON value fails here: check it in
    current_document (or refuse non-finite floats in its model) and add it to the list."""
    assert open_positions(AgentState) == agent_state._CHECKED_POSITIONS
    # Message and usage rows have no such place, so their strict validation refuses them alone.
    assert open_positions(AgentMessage) == frozenset() and open_positions(Usage) == frozenset()


def test_a_document_this_arknb_writes_takes_the_one_parse_way():
    state = make_full_state("s")
    assert current_document(state.to_json()) == state
    assert agent_state._one_parse is True


@pytest.mark.parametrize("number", NONFINITE)
@pytest.mark.parametrize("place", PLACES)
def test_a_nonfinite_number_anywhere_is_refused_with_the_two_parse_error(place, number, monkeypatch):
    text = _text_with(place, number)
    assert current_document(text) is None
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text, source="session 's' (test)")
    error = info.value
    assert error.code == "state_corrupt" and error.layer == "storage" and "session 's' (test)" in error.message
    assert error.message == _two_parse_error(text, monkeypatch).message
    # The two-parse way names the constant or says it is too large.
    assert number.lstrip("-") in error.message or "too large" in error.message


MALFORMED = {
    # What json refuses, pydantic's parser must refuse too (or the one-parse way would accept it).
    "control_character": ("history.0.contents.0.text", '"a\x01b"'),
    "raw_newline": ("history.0.contents.0.text", '"a\nb"'),
    "bad_escape": ("history.0.contents.0.text", '"a\\qb"'),
    "leading_zero": ("total_loop_count", "07"),
    "bare_dot": ("updated_at", "1."),
    "dot_first": ("updated_at", ".5"),
    "plus_sign": ("total_loop_count", "+7"),
    "empty_exponent": ("updated_at", "1e"),
    "lowercase_constant": ("metadata.owner", "nan"),
    "python_constant": ("metadata.owner", "True"),
    "single_quotes": ("metadata.owner", "'workshop'"),
    "trailing_comma": ("metadata.nested.list", "[1, 2,]"),
    "int_of_4301_digits": ("metadata.owner", "1" + "0" * 4300),
    "int_field_of_4301_digits": ("total_loop_count", "1" + "0" * 4300),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_json_that_pythons_parser_refuses_is_refused_with_the_two_parse_error(kind, monkeypatch):
    place, token = MALFORMED[kind]
    text = _text_with(place, token)
    assert current_document(text) is None
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text, source="session 's' (test)")
    assert info.value.code == "state_corrupt"
    assert info.value.message == _two_parse_error(text, monkeypatch).message


def test_nan_written_inside_strings_is_text_and_is_read_in_one_parse():
    doc = _document()
    doc["history"][2]["tool_calls"][0]["arguments_json"] = '{"a": NaN, "b": Infinity, "c": 1e400}'
    doc["history"][0]["contents"][0]["text"] = "NaN, -Infinity and 1e400 are not JSON numbers"
    doc["metadata"]["note"] = "NaN"
    text = json.dumps(doc)
    state = current_document(text)
    assert state is not None and AgentState.from_json(text) == state
    assert state.history[2].tool_calls[0].arguments_json == '{"a": NaN, "b": Infinity, "c": 1e400}'


def test_a_huge_integer_in_a_float_field_is_refused_it_used_to_read_as_infinity(monkeypatch):
    # json reads it as an int (no parse_float hook runs), pydantic turned it into inf, and
    # the next save wrote null: a state that could not be read back. Now it is refused.
    text = _text_with("updated_at", "1" + "0" * 400)
    error = _two_parse_error(text, monkeypatch)
    assert error.code == "state_corrupt" and "updated_at" in error.message
    with pytest.raises(ArkError) as info:
        AgentState.from_json(text)
    assert "updated_at" in info.value.message


def test_a_state_with_a_nonfinite_time_cannot_be_built_it_could_not_be_read_back():
    with pytest.raises(ValidationError):
        AgentState(session_id="s", updated_at=float("nan"))
    with pytest.raises(ValidationError):
        PendingApprovalItem.model_validate({**make_full_state().pending_approval.items[0].model_dump(),
                                            "created_at": float("inf")})


@pytest.mark.parametrize("edit", ["no_version", "old_version", "newer_version", "bom", "not_an_object",
                                  "coerced", "deep"])
def test_what_the_one_parse_way_does_not_take_goes_the_two_parse_way(edit, monkeypatch):
    doc = _document()
    if edit == "no_version":
        del doc["schema_version"]  # version 1: migrated
    elif edit == "old_version":
        doc["schema_version"] = 2
        del doc["revision"], doc["extensions"], doc["resolved_approvals"]
    elif edit == "newer_version":
        doc["schema_version"] = 99
    elif edit == "coerced":
        doc["total_loop_count"] = "3"
    elif edit == "deep":
        doc["metadata"]["deep"] = json.loads("[" * 300 + "]" * 300)
    text = json.dumps(doc)
    if edit == "bom":
        text = "\ufeff" + text
    elif edit == "not_an_object":
        text = json.dumps([doc])
    assert current_document(text) is None
    try:
        result: Any = AgentState.from_json(text)
    except ArkError as exc:
        result = (exc.code, exc.message)
    with monkeypatch.context() as patch:
        patch.setattr(agent_state, "_one_parse", False)
        try:
            expected: Any = AgentState.from_json(text)
        except ArkError as exc:
            expected = (exc.code, exc.message)
    assert result == expected
    if edit in ("no_version", "old_version", "bom"):
        assert isinstance(result, AgentState) and result.schema_version == agent_state.SCHEMA_VERSION
    else:
        assert result[0] in ("state_corrupt", "state_version_unsupported")


def test_the_two_parse_way_is_taken_when_the_schema_has_an_unchecked_place(monkeypatch):
    monkeypatch.setattr(agent_state, "_one_parse", None)  # found again on the next call
    monkeypatch.setattr(agent_state, "_CHECKED_POSITIONS", frozenset())
    text = make_full_state("s").to_json()
    assert current_document(text) is None
    assert AgentState.from_json(text) == make_full_state("s")


# -- the schema walk and the value walk ------------------------------------------------------------


class _Inner(BaseModel):
    weight: float
    finite: float = 0.0
    model_config = ConfigDict(allow_inf_nan=False)


class _Tree(BaseModel):
    name: str
    count: int
    ratio: float | None = None
    data: dict[str, Any] = {}
    inner: tuple[_Inner, ...] = ()
    children: list[_Tree] = []


class _Coerced(BaseModel):
    text: str

    @field_validator("text", mode="before")
    @classmethod
    def _to_text(cls, value: Any) -> Any:
        return str(value)  # NaN would become "nan": the walk cannot tell, so it reports it


class _SchemaLikeDefault(BaseModel):
    parameters: dict[str, str] = {"type": "float"}  # data that looks like a schema is not read as one


def test_open_positions_finds_floats_json_values_python_validators_and_recursion():
    assert open_positions(_Tree) == {("ratio", "float"), ("data.*", "any"), ("children.*", "recursive")}
    assert open_positions(_Coerced) == {("text", "function-before")}
    assert open_positions(_Inner) == frozenset()
    assert open_positions(ContentPart) == frozenset()
    assert open_positions(_SchemaLikeDefault) == frozenset()


@pytest.mark.parametrize("value, expected", [
    ({"a": [1, 2.5, None, "NaN", True]}, False),
    ({"a": [1, {"b": float("nan")}]}, True),
    ([[[(float("-inf"),)]]], True),
    (float("inf"), True),
    ({"big": 10 ** 400}, False),
])
def test_holds_nonfinite(value, expected):
    assert holds_nonfinite(value) is expected


def test_holds_nonfinite_walks_any_depth_without_recursion():
    value: Any = [float("nan")]
    for _ in range(100_000):
        value = [value]
    assert holds_nonfinite(value) is True
