"""Deeply frozen containers (arknb.domain.frozen) and the domain values that hold them."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

import arknb as ark
from arknb.domain.frozen import FrozenDict, FrozenList, freeze, thaw
from arknb.domain.json_decode import MAX_JSON_DEPTH, JSONTooDeepError

ORIGIN = "Thing.field is read-only: do it another way"


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("write", [
    lambda d: d.__setitem__("x", 1),
    lambda d: d.__delitem__("a"),
    lambda d: d.update(x=1),
    lambda d: d.setdefault("x", 1),
    lambda d: d.pop("a"),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.__ior__({"x": 1}),
    lambda d: d.__init__({"x": 1}),
])
def test_every_dict_write_raises_type_error_naming_the_origin(write):
    frozen = freeze({"a": 1}, ORIGIN)
    with pytest.raises(TypeError, match="Thing.field is read-only: do it another way"):
        write(frozen)
    assert frozen == {"a": 1}


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(0, 9),
    lambda x: x.__setitem__(slice(0, 1), [9]),
    lambda x: x.__delitem__(0),
    lambda x: x.append(9),
    lambda x: x.extend([9]),
    lambda x: x.insert(0, 9),
    lambda x: x.pop(),
    lambda x: x.remove(1),
    lambda x: x.clear(),
    lambda x: x.sort(),
    lambda x: x.reverse(),
    lambda x: x.__iadd__([9]),
    lambda x: x.__imul__(2),
])
def test_every_list_write_raises_type_error_naming_the_origin(write):
    frozen = freeze({"xs": [2, 1]}, ORIGIN)["xs"]
    with pytest.raises(TypeError, match="Thing.field is read-only"):
        write(frozen)
    assert frozen == [2, 1]


def test_freezing_reaches_every_level_and_keeps_values_equal():
    value = {"a": [1, {"b": [2, (3, {"c": 4})]}], "s": "t"}
    frozen = freeze(value, ORIGIN)
    assert frozen == value and isinstance(frozen, dict)
    assert type(frozen) is FrozenDict
    assert type(frozen["a"]) is FrozenList
    assert type(frozen["a"][1]) is FrozenDict
    assert isinstance(frozen["a"][1]["b"][1], tuple)  # tuples stay tuples, of frozen items
    assert type(frozen["a"][1]["b"][1][1]) is FrozenDict
    with pytest.raises(TypeError):
        frozen["a"][1]["b"][1][1]["c"] = 5
    value["a"].append("later")  # the frozen value is a copy: the original may still change
    assert frozen["a"] == [1, {"b": [2, (3, {"c": 4})]}]


def test_frozen_values_are_shared_not_copied_again():
    inner = freeze({"k": [1]}, ORIGIN)
    outer = freeze({"inner": inner, "more": [inner]}, "other")
    assert outer["inner"] is inner and outer["more"][0] is inner
    assert freeze(outer) is outer


def test_copies_are_mutable_and_thaw_is_deep():
    frozen = freeze({"a": [1, {"b": 2}]}, ORIGIN)
    shallow = dict(frozen)
    shallow["new"] = 1
    assert type(frozen.copy()) is dict and type(frozen | {"x": 1}) is dict
    assert type(frozen["a"][:]) is list and type(frozen["a"] + [3]) is list
    deep = frozen.thaw()
    deep["a"][1]["b"] = 3
    deep["a"].append(4)
    assert type(deep["a"]) is list and type(deep["a"][1]) is dict
    assert frozen == {"a": [1, {"b": 2}]}
    assert thaw(freeze([{"x": [1]}])) == [{"x": [1]}]


def test_json_pickle_copy_hash_and_repr_behave_like_plain_values():
    frozen = freeze({"a": [1, {"b": None}], "c": 1.5}, ORIGIN)
    assert json.loads(json.dumps(frozen)) == frozen
    for restored in (pickle.loads(pickle.dumps(frozen)), copy.deepcopy(frozen)):
        assert restored == frozen and type(restored) is FrozenDict and type(restored["a"]) is FrozenList
        with pytest.raises(TypeError, match="Thing.field is read-only"):
            restored["a"].append(1)
    assert copy.copy(frozen) is frozen
    assert hash(frozen) == hash(freeze({"c": 1.5, "a": [1, {"b": None}]}))
    assert repr(frozen) == repr({"a": [1, {"b": None}], "c": 1.5})


def test_building_a_frozen_dict_or_list_directly_freezes_the_contents():
    built = FrozenDict({"a": [1]}, b={"c": 2})
    assert type(built["a"]) is FrozenList and type(built["b"]) is FrozenDict
    with pytest.raises(TypeError, match="read-only"):
        built["b"]["c"] = 3
    assert type(FrozenList([[1]])[0]) is FrozenList
    keyed = FrozenDict.fromkeys(["a", "b"], [])
    assert keyed == {"a": [], "b": []} and type(keyed["a"]) is FrozenList


def test_nesting_deeper_than_the_limit_and_cycles_are_a_value_error_not_a_recursion_error():
    assert freeze(nested(MAX_JSON_DEPTH)) == nested(MAX_JSON_DEPTH)
    with pytest.raises(JSONTooDeepError, match=f"more than {MAX_JSON_DEPTH} levels"):
        freeze(nested(MAX_JSON_DEPTH + 1))
    with pytest.raises(JSONTooDeepError):
        freeze(nested(100_000))
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError):
        freeze({"c": cycle})


# --- the domain values that hold them -------------------------------------------------

def test_model_config_extensions_and_tool_choice_are_read_only():
    config = ark.ModelConfig(model="m", extensions={"thinking": {"type": "enabled"}},
                             tool_choice={"type": "function", "function": {"name": "add"}})
    with pytest.raises(TypeError, match=r"ModelConfig.extensions is read-only: .*model_copy"):
        config.extensions["thinking"]["type"] = "disabled"
    with pytest.raises(TypeError, match="ModelConfig.tool_choice is read-only"):
        config.tool_choice["function"]["name"] = "other"
    with pytest.raises(TypeError, match="ModelConfig.extensions is read-only"):
        ark.ModelConfig().extensions["x"] = 1  # the default too
    assert config.extensions == {"thinking": {"type": "enabled"}}


def test_tool_definition_parameters_are_read_only_and_the_tool_shares_them():
    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.parameters is add.definition.parameters
    with pytest.raises(TypeError, match=r"ToolDefinition.parameters \(a tool's JSON Schema\) is read-only"):
        add.definition.parameters["properties"]["a"]["type"] = "string"
    with pytest.raises(TypeError, match="read-only"):
        add.definition.parameters["required"].append("c")
    assert add.definition.parameters["properties"]["a"]["type"] == "integer"
    with pytest.raises(TypeError):
        ark.ToolDefinition(name="t").parameters["type"] = "array"


def test_tool_call_arguments_are_read_only_and_with_arguments_is_the_way_to_change_them():
    call = ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "opts": {"xs": [1]}}')
    with pytest.raises(TypeError, match=r"ToolCall.arguments is read-only.*with_arguments"):
        call.arguments["a"] = 2
    with pytest.raises(TypeError, match="ToolCall.arguments is read-only"):
        call.arguments["opts"]["xs"].append(2)
    changed = call.with_arguments(call.arguments | {"a": 2})  # a frozen dict in, JSON text out
    assert changed.arguments == {"a": 2, "opts": {"xs": [1]}} and changed.id == "c1"
    assert call.arguments == {"a": 1, "opts": {"xs": [1]}}


@pytest.mark.parametrize("arguments", [nested(MAX_JSON_DEPTH + 5), nested(50_000)])
def test_with_arguments_refuses_nesting_too_deep_for_json(arguments):
    call = ark.ToolCall(id="c1", name="t")
    with pytest.raises(ark.ArkError) as info:
        call.with_arguments({"x": arguments})
    assert info.value.code == "invalid_argument" and "levels deep" in info.value.message


def test_with_arguments_refuses_values_json_cannot_hold():
    with pytest.raises(ark.ArkError) as info:
        ark.ToolCall(id="c1", name="t").with_arguments({"x": object()})
    assert info.value.code == "invalid_argument"


def test_state_metadata_and_extensions_are_read_only_and_survive_every_kind_of_copy():
    state = ark.AgentState(session_id="s", metadata={"k": [1, {"d": 2}]}, extensions={"plan": {"todos": []}})
    with pytest.raises(TypeError, match=r"AgentState.metadata is read-only .*model_copy"):
        state.metadata["k"][1]["d"] = 3
    with pytest.raises(TypeError, match="AgentState.extensions is read-only"):
        state.extensions["plan"]["todos"].append("x")
    updated = state.model_copy(update={"metadata": {"new": [1]}, "extensions": {"e": {"x": []}}})
    with pytest.raises(TypeError, match="AgentState.metadata is read-only"):
        updated.metadata["new"].append(2)  # model_copy(update=...) freezes too
    with pytest.raises(TypeError, match="AgentState.extensions is read-only"):
        updated.extensions["e"]["x"].append(2)
    for copied in (ark.AgentState.from_json(state.to_json()), pickle.loads(pickle.dumps(state)),
                   state.model_copy(deep=True), ark.AgentState.model_validate(state.model_dump())):
        assert copied == state
        with pytest.raises(TypeError, match="AgentState.metadata is read-only"):
            copied.metadata["k"].append(2)
    dumped = state.model_dump()
    dumped["metadata"]["k"].append(2)  # model_dump gives plain, mutable values
    assert type(dumped["metadata"]) is dict and state.metadata["k"] == [1, {"d": 2}]


def test_state_metadata_nested_too_deeply_is_a_validation_error():
    import pydantic

    with pytest.raises(pydantic.ValidationError, match="levels deep"):
        ark.AgentState(session_id="s", metadata={"x": nested(MAX_JSON_DEPTH + 1)})


def test_the_fast_model_copy_is_pydantic_s_copy_plus_freezing():
    from pydantic import BaseModel

    state = ark.AgentState(session_id="s", metadata={"k": [1]}, is_running=True)
    for update in (None, {}, {"is_running": False, "current_run_id": "r9"}, {"metadata": {"x": [2]}}):
        ours = state.model_copy(update=update)
        theirs = BaseModel.model_copy(state, update=update)
        assert ours == theirs and ours is not state
        assert ours.model_fields_set == theirs.model_fields_set
        assert ours.model_dump() == theirs.model_dump()
        assert ours.__pydantic_extra__ is None and ours.__pydantic_private__ is None
        ours_dict = ours.__dict__
        assert ours_dict is not state.__dict__  # a copy: the original's fields never change
    assert state.is_running is True and state.metadata == {"k": [1]}
    deep = state.model_copy(update={"metadata": {"y": [3]}}, deep=True)
    assert type(deep.metadata["y"]) is FrozenList and deep.history == state.history


def test_a_model_request_with_frozen_parts_round_trips_through_json_and_pickle():
    definition = ark.ToolDefinition(name="add", parameters={"type": "object", "properties": {"a": {"type": "integer"}}})
    request = ark.ModelRequest(messages=(ark.AgentMessage.user("hi"),), tools=(definition,),
                               config=ark.ModelConfig(model="m", extensions={"thinking": {"type": "enabled"}}))
    for copied in (ark.ModelRequest.model_validate_json(request.model_dump_json()), pickle.loads(pickle.dumps(request)),
                   request.model_copy(deep=True)):
        assert copied == request
        with pytest.raises(TypeError, match="ModelConfig.extensions is read-only"):
            copied.config.extensions["thinking"]["type"] = "off"
        with pytest.raises(TypeError, match="ToolDefinition.parameters"):
            copied.tools[0].parameters["properties"]["a"]["type"] = "string"
    assert hash(definition) == hash(ark.ToolDefinition.model_validate(definition.model_dump()))
