"""Typed answers (DESIGN §17): output_type, native vs final_result tool, bounded retries, output_invalid."""

from __future__ import annotations

import dataclasses
import json
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

import arknb as ark
from arknb import (
    ArkError, EventTypes, ModelResponseHookResult, ScriptedModel, ScriptedTurn, ToolCall, TurnCompletionHookResult,
)

from ._events_kit import of, record


class Weather(BaseModel):
    city: str
    temp_c: float
    sunny: bool


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Person(TypedDict):
    name: str
    age: int


OSLO = Weather(city="Oslo", temp_c=4.5, sunny=False)


def final_call(arguments: dict, call_id: str = "f1") -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCall(id=call_id, name="final_result", arguments_json=json.dumps(arguments))])


def runtime_for(turns, *, native: bool = True, **options) -> tuple[ark.AgentRuntime, ScriptedModel]:
    model = ScriptedModel(turns, json_schema_output=native)
    return ark.AgentRuntime(model, **options), model


# -- the happy paths, per type and per mode -----------------------------------------------

CASES = [
    (Weather, OSLO, OSLO),
    (Point, Point(1, 2), Point(1, 2)),
    (Person, {"name": "Ada", "age": 36}, {"name": "Ada", "age": 36}),
    (list[int], [3, 1, 2], [3, 1, 2]),
    (Literal["yes", "no"], "no", "no"),
    (list[Weather], [OSLO], [OSLO]),
]


@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
@pytest.mark.parametrize("output_type,scripted,expected", CASES,
                         ids=["pydantic", "dataclass", "typeddict", "list", "literal", "list_of_models"])
async def test_each_kind_of_output_type_comes_back_typed(output_type, scripted, expected, native):
    runtime, model = runtime_for([ScriptedTurn(output=scripted)], native=native, output_type=output_type)
    result = await runtime.run("Answer.")
    assert result.stop_reason == "completed" and result.error is None
    assert result.output == expected and type(result.output) is type(expected)
    request = model.requests[0]
    if native:  # asked for with response_format json_schema: the request carries the schema, no tool
        assert request.output is not None and request.output.json_schema["type"] == "object"
        assert [t.name for t in request.tools] == []
        assert ark.OutputSpec.of(output_type).validate_json(result.text) == expected  # text stays the raw JSON
    else:  # asked for with the final_result tool, whose parameters are the schema
        assert request.output is None
        tool = next(t for t in request.tools if t.name == "final_result")
        assert tool.parameters["type"] == "object"
        # the call is paired in history: a later run of the session never meets an unpaired call
        assert runtime.history[-1].role == "tool" and runtime.history[-1].text == "Final answer accepted."


async def test_str_output_is_the_plain_text():
    runtime, model = runtime_for(["Just words."], output_type=str)
    events = record(runtime)
    result = await runtime.run("Say something.")
    assert of(events, EventTypes.OUTPUT_VALIDATED) == []  # nothing validated: the chat shows it as text
    assert result.output == "Just words." and model.requests[0].output is None and not model.requests[0].tools


async def test_a_run_without_output_type_has_no_output_and_asks_for_nothing():
    runtime, model = runtime_for(['{"city": "Oslo"}'])
    result = await runtime.run("Hi")
    assert result.output is None and result.text == '{"city": "Oslo"}' and model.requests[0].output is None
    assert "output" not in result.to_dict()


async def test_output_type_per_run_overrides_the_runtimes():
    runtime, model = runtime_for([ScriptedTurn(output=Point(1, 2)), "plain"], output_type=Point)
    first = await runtime.run("a point")
    second = await runtime.run("now text", output_type=str)
    assert first.output == Point(1, 2) and second.output == "plain"
    assert model.requests[0].output.name == "Point" and model.requests[1].output is None


async def test_the_typed_answer_travels_in_events_and_the_result_dict():
    runtime, _ = runtime_for([ScriptedTurn(output=OSLO)], output_type=Weather)
    events = record(runtime)
    result = await runtime.run("Weather?")
    validated = of(events, EventTypes.OUTPUT_VALIDATED)
    assert [e.payload["output"] for e in validated] == [OSLO.model_dump()]
    assert validated[0].payload["mode"] == "native" and validated[0].payload["name"] == "Weather"
    success = of(events, EventTypes.AGENT_SUCCESS)[0]
    assert success.payload["output"] == OSLO.model_dump() == result.to_dict()["output"]


# -- hostile answers: wrong types, never valid ---------------------------------------------

@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
async def test_valid_json_with_wrong_types_is_retried_with_the_errors_then_accepted(native):
    wrong = {"city": "Oslo", "temp_c": "cold", "sunny": "maybe"}
    first = ScriptedTurn(json.dumps(wrong)) if native else final_call(wrong)
    runtime, model = runtime_for([first, ScriptedTurn(output=OSLO)], native=native, output_type=Weather)
    events = record(runtime)
    result = await runtime.run("Weather?")
    assert result.stop_reason == "completed" and result.output == OSLO
    assert len(model.requests) == 2
    retry = of(events, EventTypes.OUTPUT_RETRY)
    assert len(retry) == 1 and retry[0].payload["retrying"] is True
    assert list(retry[0].payload["fields"]) == ["temp_c", "sunny"]
    # the second request tells the model what was wrong, field by field
    feedback = model.requests[1].messages[-1]
    assert feedback.role == ("user" if native else "tool")
    assert "temp_c" in feedback.text and "sunny" in feedback.text and "Weather" in feedback.text
    assert [e.payload["action"] for e in of(events, EventTypes.TURN_COMPLETED)] == ["output_retry", "accept"]


@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
async def test_a_model_that_never_answers_validly_is_bounded_and_fails_output_invalid(native):
    wrong = {"city": "Oslo", "temp_c": "cold", "sunny": False}
    turn = ScriptedTurn(json.dumps(wrong)) if native else final_call(wrong)
    runtime, model = runtime_for([turn] * 10, native=native, output_type=Weather)
    events = record(runtime)
    result = await runtime.run("Weather?")
    assert result.stop_reason == "failed" and result.output is None
    assert result.error.code == "output_invalid" and result.error.layer == "runtime"
    assert "temp_c" in result.error.message and "Weather" in result.error.message
    assert "2 more tries" in result.error.message and "max_output_retries" in result.error.message
    assert len(model.requests) == 3  # the first try and max_output_retries=2 more, never the 4th
    assert [e.payload["retrying"] for e in of(events, EventTypes.OUTPUT_RETRY)] == [True, True, False]
    # the session stays usable: every call answered, the next run works
    called = {c.id for m in runtime.history for c in m.tool_calls}
    assert called == {m.tool_call_id for m in runtime.history if m.role == "tool"}
    model.turns = model.turns + (ScriptedTurn(output=OSLO),)
    model._next = len(model.turns) - 1
    again = await runtime.run("Again, please.")
    assert again.output == OSLO


async def test_max_output_retries_bounds_the_tries():
    runtime, model = runtime_for(["not json"] * 5, output_type=Weather, max_output_retries=0)
    result = await runtime.run("Weather?")
    assert result.error.code == "output_invalid" and len(model.requests) == 1
    assert "0 more tries" in result.error.message and "(answer)" in result.error.message


async def test_a_typed_answer_cut_at_max_tokens_says_so_to_the_model_and_the_user():
    cut = ScriptedTurn('{"city": "Oslo", "temp', finish_reason="length")
    runtime, model = runtime_for([cut, cut], output_type=Weather, max_output_retries=1)
    result = await runtime.run("Weather?")
    assert result.error.code == "output_invalid" and result.truncated
    assert "cut at max_tokens" in model.requests[1].messages[-1].text
    assert "Raise ModelConfig.max_tokens" in result.error.message


async def test_non_json_text_in_tool_mode_asks_for_the_tool():
    runtime, model = runtime_for(["It is cold in Oslo.", ScriptedTurn(output=OSLO)], native=False,
                                 output_type=Weather)
    result = await runtime.run("Weather?")
    assert result.output == OSLO
    feedback = model.requests[1].messages[-1]
    assert feedback.role == "user" and "final_result" in feedback.text


async def test_a_final_answer_with_other_calls_pairs_them_as_not_run():
    @ark.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        raise AssertionError("never run: the final answer came in the same turn")

    turn = ScriptedTurn(tool_calls=[ToolCall(id="l1", name="lookup", arguments_json='{"city": "Oslo"}'),
                                    ToolCall(id="f1", name="final_result", arguments_json=OSLO.model_dump_json(),
                                             index=1)])
    runtime, _ = runtime_for([turn], native=False, output_type=Weather, tools=[lookup])
    result = await runtime.run("Weather?")
    assert result.output == OSLO
    answers = {m.tool_call_id: m for m in runtime.history if m.role == "tool"}
    assert set(answers) == {"l1", "f1"} and answers["l1"].is_error and "not executed" in answers["l1"].text


async def test_tools_then_a_typed_answer():
    @ark.tool
    def temperature(city: str) -> float:
        """The temperature in a city."""
        return 4.5

    turns = [ScriptedTurn(tool_calls=[ToolCall(id="t1", name="temperature", arguments_json='{"city": "Oslo"}')]),
             ScriptedTurn(output=OSLO)]
    for native in (True, False):
        runtime, model = runtime_for(turns, native=native, output_type=Weather, tools=[temperature])
        result = await runtime.run("Weather?")
        assert result.output == OSLO and result.turns == 2


# -- plays with hooks, plan mode and sub-agents ----------------------------------------------

async def test_an_after_model_call_retry_works_as_before_and_hooks_see_the_raw_answer():
    seen = []
    runtime, model = runtime_for(['{"city": "Paris", "temp_c": 30, "sunny": true}', ScriptedTurn(output=OSLO)],
                                 output_type=Weather)

    @runtime.hooks.after_model_call
    def only_oslo(ctx):
        seen.append(ctx.response.message.text)
        if "Paris" in ctx.response.message.text:
            return ModelResponseHookResult.retry("we asked about Oslo")
        return None

    events = record(runtime)
    result = await runtime.run("Weather in Oslo?")
    assert result.output == OSLO and len(model.requests) == 2
    assert json.loads(seen[0])["city"] == "Paris" and json.loads(seen[1])["city"] == "Oslo"
    assert of(events, EventTypes.OUTPUT_RETRY) == []  # the hook's retry is not an output retry
    assert model.requests[1].output == model.requests[0].output  # the retried request asks the same way


async def test_an_after_model_call_rewrite_is_what_is_validated():
    runtime, _ = runtime_for(['{"city": "oslo", "temp_c": 4.5, "sunny": false}'], output_type=Weather)

    @runtime.hooks.after_model_call
    def capitalise(ctx):
        message = ctx.response.message
        fixed = message.model_copy(update={"contents": (ark.ContentPart.from_text(message.text.replace(
            '"oslo"', '"Oslo"')),)})
        return ModelResponseHookResult.proceed(ctx.response.model_copy(update={"message": fixed}))

    result = await runtime.run("Weather?")
    assert result.output == OSLO


async def test_on_turn_completion_can_continue_after_a_typed_answer():
    runtime, model = runtime_for([ScriptedTurn(output=Weather(city="Oslo", temp_c=99, sunny=True)),
                                  ScriptedTurn(output=OSLO)], native=False, output_type=Weather)

    @runtime.hooks.on_turn_completion
    def plausible(ctx):
        if ctx.turn == 1:
            return TurnCompletionHookResult.continue_run([ark.AgentMessage.user("99 degrees? Check again.")])
        return None

    result = await runtime.run("Weather?")
    assert result.output == OSLO and len(model.requests) == 2
    # the first answer's final_result call was paired before the hook's message
    roles = [m.role.value for m in model.requests[1].messages]
    assert roles[-3:] == ["assistant", "tool", "user"]


async def test_plan_mode_then_a_typed_answer():
    todos = ToolCall(id="p1", name="write_todos", arguments_json=json.dumps(
        {"todos": [{"content": "Look up Oslo", "status": "completed"}]}))
    for native in (True, False):
        runtime, _ = runtime_for([ScriptedTurn(tool_calls=[todos]), ScriptedTurn(output=OSLO)], native=native,
                                 output_type=Weather, plan_mode=ark.PlanMode.AUTO)
        result = await runtime.run("Weather?")
        assert result.output == OSLO and runtime.state.plan.version == 1


async def test_a_subagent_with_an_output_type_answers_delegate_task_with_its_json():
    child_model = ScriptedModel([ScriptedTurn(output=OSLO)], json_schema_output=False)
    child = ark.SubAgent("forecaster", "Gives the weather.",
                         lambda sid: ark.AgentRuntime(child_model, session_id=sid), output_type=Weather)
    parent_model = ScriptedModel([
        ScriptedTurn(tool_calls=[ToolCall(id="d1", name="delegate_task", arguments_json=json.dumps(
            {"agent": "forecaster", "task": "Weather in Oslo?"}))]),
        "Done."])
    parent = ark.AgentRuntime(parent_model, subagents=[child])
    result = await parent.run("Ask the forecaster.")
    assert result.stop_reason == "completed"
    answer = next(m for m in parent.history if m.role == "tool" and m.tool_call_id == "d1")
    assert json.loads(answer.text) == OSLO.model_dump() and not answer.is_error
    assert any(t.name == "final_result" for t in child_model.requests[0].tools)


async def test_a_cloned_subagent_takes_output_type():
    agent = ark.SubAgent.clone("helper", "Helps.", output_type=Point)
    assert agent.output_type is Point


# -- configuration errors ----------------------------------------------------------------------

async def test_a_user_tool_named_final_result_is_refused_in_tool_mode():
    @ark.tool(name="final_result")
    def final_result(x: int) -> int:
        """Mine."""
        return x

    with pytest.raises(ArkError) as caught:
        ark.AgentRuntime(ScriptedModel([], json_schema_output=False), tools=[final_result], output_type=Point)
    assert caught.value.code == "invalid_argument" and "final_result" in caught.value.message
    # natively the name is free
    ark.AgentRuntime(ScriptedModel([]), tools=[final_result], output_type=Point)


async def test_bad_output_options_are_refused():
    for options, words in [({"output_type": object()}, "cannot be validated"),
                           ({"output_mode": "json"}, "output_mode"),
                           ({"max_output_retries": -1}, "max_output_retries")]:
        with pytest.raises(ArkError, match=words):
            ark.AgentRuntime(ScriptedModel([]), **options)


def test_a_scripted_turn_is_output_or_text_not_both():
    with pytest.raises(ArkError, match="not both"):
        ScriptedTurn("text", output=OSLO)


async def test_output_mode_forces_the_way_of_asking():
    runtime, model = runtime_for([ScriptedTurn(output=OSLO)], native=True, output_type=Weather, output_mode="tool")
    assert (await runtime.run("Weather?")).output == OSLO
    assert model.requests[0].output is None and model.requests[0].tools[0].name == "final_result"


# -- across an approval pause and a restore (the durable seam) ----------------------------------

@ark.tool(risk="dangerous")
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


def wipe_then_answer() -> list:
    return [ScriptedTurn(tool_calls=[ToolCall(id="w1", name="wipe", arguments_json='{"path": "/tmp/x"}')]),
            ScriptedTurn(output=OSLO)]


@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
async def test_a_per_run_output_type_survives_an_approval_pause(tmp_path, native):
    store = ark.SQLiteStore(tmp_path / "s.db")
    runtime = ark.AgentRuntime(ScriptedModel(wipe_then_answer(), json_schema_output=native), tools=[wipe],
                               storage=store, session_id="typed")
    paused = await runtime.run("Wipe, then the weather.", output_type=Weather)
    assert paused.stop_reason == "awaiting_approval" and paused.output is None
    [item] = runtime.controller.list_pending_approvals()
    assert (await runtime.controller.approve(item.approval_id)).ok
    result = await runtime.current_run.wait()
    assert result.stop_reason == "completed" and result.output == OSLO


async def test_a_restored_runtime_answers_with_its_output_type(tmp_path):
    store = ark.SQLiteStore(tmp_path / "s.db")
    first = ark.AgentRuntime(ScriptedModel(wipe_then_answer()), tools=[wipe], storage=store, session_id="typed",
                             output_type=Weather)
    assert (await first.run("Wipe, then the weather.")).stop_reason == "awaiting_approval"
    await first.aclose()
    restored = await ark.AgentRuntime.restore("typed", storage=store, model=ScriptedModel([ScriptedTurn(output=OSLO)]),
                                              tools=[wipe], output_type=Weather)
    [item] = restored.controller.list_pending_approvals()
    assert (await restored.controller.approve(item.approval_id)).ok
    result = await restored.current_run.wait()
    assert result.output == OSLO and restored.model.requests[0].output.name == "Weather"


async def test_run_stream_takes_an_output_type():
    runtime, _ = runtime_for([ScriptedTurn(output=OSLO)])
    types = [event.type async for event in runtime.run_stream("Weather?", output_type=Weather)]
    assert "output.validated" in types and runtime.last_result.output == OSLO


@pytest.mark.parametrize("native", [True, False], ids=["native", "tool"])
async def test_a_reviewed_plan_then_a_typed_answer(native):
    todos = ToolCall(id="p1", name="write_todos", arguments_json=json.dumps(
        {"todos": [{"content": "Look up Oslo", "status": "pending"}]}))
    runtime, _ = runtime_for([ScriptedTurn(tool_calls=[todos]), ScriptedTurn(output=OSLO)], native=native,
                             output_type=Weather, plan_mode=ark.PlanMode.REVIEW)
    assert (await runtime.run("Weather?")).stop_reason == "awaiting_approval"
    [item] = runtime.controller.list_pending_approvals()
    assert item.kind == "plan" and (await runtime.controller.approve(item.approval_id)).ok
    result = await runtime.current_run.wait()
    assert result.stop_reason == "completed" and result.output == OSLO


async def test_one_scripted_output_turn_plays_right_for_each_runtime_that_shares_it():
    turn = ScriptedTurn(output=[3, 1])
    typed = await ark.AgentRuntime(ScriptedModel([turn]), output_type=list[int]).run("numbers")
    plain = await ark.AgentRuntime(ScriptedModel([turn])).run("numbers")
    tool = await ark.AgentRuntime(ScriptedModel([turn], json_schema_output=False), output_type=list[int]).run("n")
    assert typed.output == [3, 1] and json.loads(typed.text) == {"response": [3, 1]}
    assert plain.output is None and plain.text == "[3, 1]"
    assert tool.output == [3, 1]
