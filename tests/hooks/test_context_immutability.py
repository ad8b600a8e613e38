"""Hook and tool contexts are read-only all the way down (issue 10 item 6, DESIGN §5).

Every hook of a real run tries to write into what its context shows; each write must
raise ``TypeError`` naming what is read-only, and afterwards the runtime's state,
config and tools are exactly as before, with no ``hook.decision`` (nothing changed).
"""

from __future__ import annotations

import dataclasses
import operator
import pickle

import pydantic
import pytest

import arknb as ark
from arknb.hooks.contexts import ReadOnlyContextError



def record(runtime: ark.AgentRuntime) -> list[ark.AgentEvent]:
    events: list[ark.AgentEvent] = []
    runtime.bus.subscribe(ark.EventTypes.ANY, events.append)
    return events


def of(events: list[ark.AgentEvent], type_: str) -> list[ark.AgentEvent]:
    return [e for e in events if e.type == type_]


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_runtime() -> ark.AgentRuntime:
    state = ark.AgentState(session_id="ro", metadata={"owner": {"team": ["a"]}},
                           extensions={"planner": {"todos": [{"text": "x"}]}})
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text=["Let me ", "add."],
                         tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        ark.ScriptedTurn(text="It is 3."),
    ])
    return ark.AgentRuntime(model, tools=[add], state=state,
                            config=ark.ModelConfig(model="m", extensions={"thinking": {"type": "enabled"}}))


def attempts(ctx) -> dict:
    """Writes into everything a context of this slot shows, keyed by what was written."""
    writes = {
        "state.metadata[...]": lambda: ctx.state.metadata.__setitem__("owner", "me"),
        "state.metadata nested list": lambda: ctx.state.metadata["owner"]["team"].append("b"),
        "state.extensions nested": lambda: ctx.state.extensions["planner"]["todos"][0].__setitem__("text", "y"),
        "state.history[0]": lambda: operator.setitem(ctx.state.history, 0, None),
    }
    if getattr(ctx, "request", None) is not None:
        request = ctx.request
        writes["request.config.extensions"] = lambda: request.config.extensions.__setitem__("x", 1)
        writes["request.config.extensions nested"] = lambda: request.config.extensions["thinking"].update(type="off")
        writes["request.tools[0].parameters"] = lambda: request.tools[0].parameters["properties"].pop("a")
        writes["request.messages"] = lambda: operator.setitem(request.messages, 0, None)
    if getattr(ctx, "available_tools", ()):
        tools = ctx.available_tools
        writes["available_tools[0].parameters"] = lambda: tools[0].parameters.__setitem__("type", "array")
        writes["available_tools[0].parameters nested"] = lambda: tools[0].parameters["required"].append("c")
    if getattr(ctx, "call", None) is not None:
        call = ctx.call
        writes["call.arguments"] = lambda: call.arguments.__setitem__("a", 99)
    if getattr(ctx, "result", None) is not None and isinstance(ctx.result, ark.ToolResult):
        writes["result.contents"] = lambda: operator.setitem(ctx.result.contents, 0, None)
    if getattr(ctx, "message", None) is not None:
        writes["message.contents"] = lambda: operator.setitem(ctx.message.contents, 0, None)
    if getattr(ctx, "model_message", None) is not None:
        writes["model_message.tool_calls"] = lambda: operator.setitem(ctx.model_message.tool_calls, 0, None)
    if getattr(ctx, "input", ()):
        writes["input"] = lambda: operator.setitem(ctx.input, 0, None)
    writes["the context itself"] = lambda: setattr(ctx, "state", None)
    outcomes = {}
    for name, write in writes.items():
        try:
            write()
        except TypeError as exc:
            outcomes[name] = str(exc)
        else:
            outcomes[name] = None  # the write went through: the test fails on it
    return outcomes


SLOTS = ("before_run", "before_model_call", "on_model_chunk", "after_model_call", "before_tool_call",
         "after_tool_call", "on_turn_completion", "before_persist_state", "after_persist_state", "after_run")


async def test_every_write_a_hook_tries_raises_type_error_and_changes_nothing():
    runtime = make_runtime()
    before_state = runtime.state.model_dump()
    before_config = runtime.config.model_dump()
    before_tools = [t.model_dump() for t in runtime.tools.definitions()]
    seen: dict[str, dict] = {}
    for slot in SLOTS:
        def hook(ctx, slot=slot):
            seen.setdefault(slot, {}).update(attempts(ctx))
        getattr(runtime.hooks, slot)(name=f"writer_{slot}")(hook)
    events = record(runtime)

    result = await runtime.run("What is 1 + 2?")

    assert result.stop_reason == "completed" and result.text == "It is 3."
    assert set(seen) == set(SLOTS)
    went_through = {slot: [name for name, error in outcomes.items() if error is None]
                    for slot, outcomes in seen.items()}
    assert all(not names for names in went_through.values()), went_through
    # The writes a chunk hook, a tool hook and a model hook tried are all in there.
    assert "request.config.extensions nested" in seen["before_model_call"]
    assert "available_tools[0].parameters nested" in seen["before_tool_call"]
    assert "call.arguments" in seen["before_tool_call"] and "call.arguments" in seen["after_tool_call"]
    assert "state.metadata nested list" in seen["on_model_chunk"]
    # Nothing changed, so no hook.decision and no diagnostics (every hook returned None).
    assert of(events, ark.EventTypes.HOOK_DECISION) == []
    assert of(events, ark.EventTypes.HOOK_DIAGNOSTIC) == []
    after_state = runtime.state.model_dump()
    for field in ("metadata", "extensions"):
        assert after_state[field] == before_state[field]
    assert runtime.config.model_dump() == before_config
    assert [t.model_dump() for t in runtime.tools.definitions()] == before_tools
    assert [m.text for m in runtime.history if m.role == "tool"] == ["3"]  # the call ran with a=1


async def test_the_errors_name_what_is_read_only_and_the_way_forward():
    runtime = make_runtime()
    messages: dict[str, str] = {}

    @runtime.hooks.before_model_call
    def on_request(ctx):
        messages.update({k: v for k, v in attempts(ctx).items() if k.startswith(("request", "state.metadata["))})

    @runtime.hooks.before_tool_call
    def on_call(ctx):
        messages.update({k: v for k, v in attempts(ctx).items() if k in ("call.arguments", "available_tools[0].parameters",
                                                                         "the context itself")})

    await runtime.run("go")
    assert "ModelConfig.extensions is read-only" in messages["request.config.extensions"]
    assert "model_copy(update=" in messages["request.config.extensions"]
    assert "ToolDefinition.parameters" in messages["request.tools[0].parameters"]
    assert "ToolDefinition.parameters" in messages["available_tools[0].parameters"]
    assert "ToolCall.arguments is read-only" in messages["call.arguments"]
    assert "with_arguments" in messages["call.arguments"]
    assert "AgentState.metadata is read-only" in messages["state.metadata[...]"]
    assert "return a hook result" in messages["state.metadata[...]"]
    assert messages["the context itself"].startswith("ToolCallHookContext.state is read-only")
    assert "ToolCallHookResult" in messages["the context itself"] and "copy_with(state=" in messages["the context itself"]


async def test_a_tool_sees_the_state_read_only_too():
    outcome = {}

    @ark.tool
    def peek(ctx: ark.ToolContext) -> str:
        """Try to write into the state."""
        try:
            ctx.state.metadata["owner"]["team"].append("tool")
        except TypeError as exc:
            outcome["error"] = str(exc)
        return "done"

    runtime = ark.AgentRuntime(
        ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="peek")]), "ok"]),
        tools=[peek], state=ark.AgentState(session_id="t", metadata={"owner": {"team": ["a"]}}))
    await runtime.run("go")
    assert "AgentState.metadata is read-only" in outcome["error"]
    assert runtime.state.metadata == {"owner": {"team": ["a"]}}


async def test_a_rewrite_goes_through_a_result_and_is_recorded():
    runtime = make_runtime()

    @runtime.hooks.before_tool_call
    def double(ctx):
        return ark.ToolCallHookResult.proceed(ctx.call.with_arguments(ctx.call.arguments | {"a": 10}))

    @runtime.hooks.before_model_call
    def no_thinking(ctx):
        config = ctx.request.config.model_copy(update={"extensions": ctx.request.config.extensions | {"thinking": None}})
        with pytest.raises(TypeError):
            config.extensions["more"] = 1  # the changed copy is read-only as well
        return ark.ModelCallHookResult.proceed(ctx.request.model_copy(update={"config": config}))

    events = record(runtime)
    await runtime.run("go")
    assert [m.text for m in runtime.history if m.role == "tool"] == ["12"]
    decisions = of(events, ark.EventTypes.HOOK_DECISION)
    assert {d.payload["slot"] for d in decisions} == {"before_tool_call", "before_model_call"}
    assert runtime.config.extensions == {"thinking": {"type": "enabled"}}  # the runtime's own config is unchanged


def test_contexts_copy_with_keeps_them_frozen_and_they_still_pickle():
    state = ark.AgentState(session_id="s", metadata={"k": [1]})
    ctx = ark.ToolCallHookContext(session_id="s", run_id="r", state=state,
                                  call=ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1}'))
    copied = ctx.copy_with(available_tools=[add.definition])
    assert copied.available_tools == (add.definition,) and isinstance(copied.available_tools, tuple)
    with pytest.raises(ReadOnlyContextError):
        copied.call = None
    with pytest.raises(dataclasses.FrozenInstanceError):  # still what a frozen dataclass raises
        del copied.call
    restored = pickle.loads(pickle.dumps(copied))
    assert restored == copied
    with pytest.raises(TypeError, match="AgentState.metadata is read-only"):
        restored.state.metadata["k"].append(2)
    with pytest.raises(TypeError, match="ToolDefinition.parameters"):
        restored.available_tools[0].parameters["properties"].clear()


def test_attribute_writes_on_the_frozen_values_inside_a_context_are_refused():
    state = ark.AgentState(session_id="s")
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        state.metadata = {}
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        ark.ModelConfig().extensions = {}
