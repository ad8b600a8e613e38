"""Notebook hook authoring (DESIGN §5): decorators, options, replace-in-place, remove/clear/iteration;
results only through factories; contexts are frozen snapshots with copy_with."""

from __future__ import annotations

import dataclasses

import pytest

from arknb import (
    AfterRunHookContext, AgentHook, AgentMessage, ArkError, BeforeRunHookContext, BeforeRunHookResult,
    HookPipeline, HookRegistry, HookSlot, ModelCallHookResult, ModelChunkHookResult, ModelResponseHookResult, StatePersistenceHookResult,
    ToolCall, ToolCallHookContext, ToolCallHookResult, ToolResult, ToolResultHookResult, TurnCompletionHookResult,
)

BASE = {"session_id": "s1", "run_id": "r1", "state": None}
CALL = ToolCall(id="c1", name="add", arguments_json='{"a": -1, "b": 2}')


def tool_ctx() -> ToolCallHookContext:
    return ToolCallHookContext(**BASE, call=CALL)


# --- decorators ----------------------------------------------------------------------

async def test_sync_and_async_function_hooks_and_none_means_proceed():
    hooks = HookRegistry()

    @hooks.before_tool_call
    def passes(ctx):
        return None

    @hooks.before_tool_call
    async def denies(ctx):
        if ctx.call.arguments["a"] < 0:
            return ToolCallHookResult.deny(ToolResult.from_text("negative input refused", is_error=True), "policy")
        return None

    assert callable(passes) and passes(tool_ctx()) is None  # the decorator returns the function itself
    assert [e.name for e in hooks] == ["passes", "denies"]
    result = await HookPipeline(hooks).before_tool_call(tool_ctx())
    assert (result.action, result.hook, result.synthetic_result.text) == ("deny", "denies", "negative input refused")


def test_every_slot_has_a_decorator():
    hooks = HookRegistry()
    for slot in HookSlot:
        getattr(hooks, slot.value)(lambda ctx: None, name=f"h_{slot.value}")
    assert {e.slot_names for e in hooks} == {(s.value,) for s in HookSlot}
    for slot in HookSlot:
        assert [e.name for e in hooks.for_slot(slot)] == [f"h_{slot.value}"]


def test_decorator_options_name_order_fail_closed_timeout():
    hooks = HookRegistry()

    @hooks.before_run(name="guard", order=-1, fail_closed=True, timeout=2.5)
    def anything(ctx):
        return None

    @hooks.before_run
    def other(ctx):
        return None

    entry = next(iter(hooks))
    assert (entry.name, entry.order, entry.fail_closed, entry.timeout) == ("guard", -1, True, 2.5)
    assert hooks.names() == ["guard", "other"]
    assert "guard" in hooks and "anything" not in hooks


async def test_reregistering_same_name_replaces_in_place():
    hooks = HookRegistry()
    log: list[str] = []
    # Simulates re-running three notebook cells, then re-running the first one after an edit.
    hooks.before_run(lambda ctx: log.append("first v1"), name="first")
    hooks.before_run(lambda ctx: log.append("second"), name="second")
    hooks.before_run(lambda ctx: log.append("first v2"), name="first")
    assert hooks.names() == ["first", "second"]
    assert len(hooks) == 2
    await HookPipeline(hooks).before_run(BeforeRunHookContext(**BASE, input=(AgentMessage.user("x"),)))
    assert log == ["first v2", "second"]


def test_remove_clear_and_iteration():
    hooks = HookRegistry()

    class Audit(AgentHook):
        async def after_run(self, ctx):
            return None

    hooks.add(Audit())
    hooks.after_tool_call(lambda ctx: None, name="inject")
    assert [e.name for e in hooks] == ["Audit", "inject"]
    assert list(hooks)[0].source.__class__ is Audit
    hooks.remove("Audit")
    assert hooks.names() == ["inject"]
    assert not hooks.for_slot(HookSlot.AFTER_RUN)
    with pytest.raises(ArkError) as info:
        hooks.remove("Audit")
    assert info.value.code == "invalid_argument" and "'Audit'" in info.value.message
    hooks.clear()
    assert list(hooks) == [] and len(hooks) == 0


def test_class_hook_name_defaults_to_class_and_can_be_given():
    class Redactor(AgentHook):
        async def on_model_chunk(self, ctx):
            return ModelChunkHookResult.proceed(ctx.text)

    hooks = HookRegistry()
    hooks.add(Redactor())
    hooks.add(Redactor(), name="redactor2")
    assert hooks.names() == ["Redactor", "redactor2"]


@pytest.mark.parametrize("options, field", [
    ({"name": 5}, "name"), ({"name": "  "}, "name"), ({"order": "1"}, "order"), ({"order": True}, "order"),
    ({"fail_closed": 1}, "fail_closed"), ({"timeout": 0}, "timeout"), ({"timeout": -1}, "timeout"),
    ({"timeout": "5"}, "timeout"),
])
def test_decorator_bad_options_raise_invalid_argument_naming_the_option(options, field):
    hooks = HookRegistry()
    with pytest.raises(ArkError) as info:
        hooks.before_tool_call(**options)
    assert info.value.code == "invalid_argument" and field in info.value.message
    with pytest.raises(ArkError):
        hooks.before_tool_call(lambda ctx: None, **options)
    assert len(hooks) == 0


def test_registering_non_callables_or_classes_is_refused():
    hooks = HookRegistry()
    with pytest.raises(ArkError, match="callable"):
        hooks.before_run("not a function")
    with pytest.raises(ArkError, match="instance"):
        hooks.add(AgentHook)
    with pytest.raises(ArkError, match="AgentHook"):
        hooks.add(lambda ctx: None)
    with pytest.raises(ArkError, match="slot"):
        hooks.register("before_lunch", lambda ctx: None)


# --- results -------------------------------------------------------------------------

RESULT_CLASSES = [BeforeRunHookResult, ModelCallHookResult, ModelChunkHookResult, ModelResponseHookResult,
                  ToolCallHookResult, ToolResultHookResult, TurnCompletionHookResult, StatePersistenceHookResult]


@pytest.mark.parametrize("cls", RESULT_CLASSES, ids=lambda c: c.__name__)
def test_results_only_via_factories_constructor_raises_type_error(cls):
    with pytest.raises(TypeError, match="factory"):
        cls("proceed")
    with pytest.raises(TypeError):
        cls(action="abort")


def test_every_slot_returns_its_actions_from_factories():
    call, result, response = CALL, ToolResult.from_text("x"), None
    actions = {
        BeforeRunHookResult: [BeforeRunHookResult.proceed(), BeforeRunHookResult.abort("r")],
        ModelCallHookResult: [ModelCallHookResult.proceed(), ModelCallHookResult.abort("r")],
        ModelChunkHookResult: [ModelChunkHookResult.proceed("t"), ModelChunkHookResult.drop(),
                               ModelChunkHookResult.hold(), ModelChunkHookResult.abort()],
        ModelResponseHookResult: [ModelResponseHookResult.proceed(response), ModelResponseHookResult.retry(),
                                  ModelResponseHookResult.abort()],
        ToolCallHookResult: [ToolCallHookResult.proceed(call), ToolCallHookResult.deny(result, "r"),
                             ToolCallHookResult.defer("r"), ToolCallHookResult.abort()],
        ToolResultHookResult: [ToolResultHookResult.proceed(result), ToolResultHookResult.stop(result),
                               ToolResultHookResult.abort()],
        TurnCompletionHookResult: [TurnCompletionHookResult.accept(), TurnCompletionHookResult.continue_run(),
                                   TurnCompletionHookResult.abort()],
        StatePersistenceHookResult: [StatePersistenceHookResult.proceed(), StatePersistenceHookResult.skip(),
                                     StatePersistenceHookResult.abort()],
    }
    expected = {
        BeforeRunHookResult: ["proceed", "abort"], ModelCallHookResult: ["proceed", "abort"],
        ModelChunkHookResult: ["proceed", "drop", "hold", "abort"], ModelResponseHookResult: ["proceed", "retry", "abort"],
        ToolCallHookResult: ["proceed", "deny", "defer", "abort"], ToolResultHookResult: ["proceed", "stop", "abort"],
        TurnCompletionHookResult: ["accept", "continue_run", "abort"],
        StatePersistenceHookResult: ["proceed", "skip", "abort"],
    }
    for cls, results in actions.items():
        assert [r.action for r in results] == expected[cls]
        assert all(isinstance(r, cls) for r in results)
        assert [r.short_circuits for r in results] == [a not in ("proceed", "accept") for a in expected[cls]]


def test_results_are_frozen():
    result = ToolCallHookResult.defer("ask")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.action = "proceed"


@pytest.mark.parametrize("build, field", [
    (lambda: ToolCallHookResult.proceed("not a call"), "call"),
    (lambda: ToolCallHookResult.deny("not a result"), "synthetic_result"),
    (lambda: ModelChunkHookResult.proceed(5), "text"),
    (lambda: ModelResponseHookResult.proceed("text"), "response"),
    (lambda: ModelCallHookResult.proceed("request"), "request"),
    (lambda: ModelCallHookResult.respond("text"), "response"),
    (lambda: ToolResultHookResult.proceed("text"), "result"),
    (lambda: ToolResultHookResult.proceed(None, ["not a message"]), "injected_messages"),
    (lambda: BeforeRunHookResult.proceed([42]), "input"),  # (a list of str is one user message)
    (lambda: TurnCompletionHookResult.continue_run(["x"]), "messages"),
    (lambda: ToolCallHookResult.abort(error="not an error"), "error"),
])
def test_result_factories_reject_wrong_types_naming_the_field(build, field):
    with pytest.raises(ArkError) as info:
        build()
    assert info.value.code == "invalid_argument"
    assert field in info.value.message


# --- contexts ------------------------------------------------------------------------

def test_contexts_are_frozen_and_copy_with_returns_a_new_snapshot():
    ctx = tool_ctx()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.call = CALL.with_arguments({"a": 1, "b": 2})
    rewritten = ctx.copy_with(call=CALL.with_arguments({"a": 1, "b": 2}))
    assert rewritten is not ctx
    assert ctx.call.arguments == {"a": -1, "b": 2}
    assert rewritten.call.arguments == {"a": 1, "b": 2}
    assert (rewritten.session_id, rewritten.run_id) == ("s1", "r1")
    with pytest.raises(TypeError):
        ctx.copy_with(no_such_field=1)


async def test_sync_chunk_hook_returning_an_awaitable_is_awaited_and_called_once():
    import arknb as ark
    calls: list[str] = []

    async def later(text):
        return ark.ModelChunkHookResult.proceed(text.upper())

    runtime = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text=["ab", "cd"])]))

    @runtime.hooks.on_model_chunk
    def shout(ctx):  # a plain function handing back a coroutine
        calls.append(ctx.text)
        return later(ctx.text)

    result = await runtime.run("go")
    assert result.text == "ABCD"
    assert calls == ["ab", "cd"]


async def test_hook_names_are_per_slot_and_a_rerun_replaces_only_within_its_slot():
    hooks = HookRegistry()
    log: list[str] = []
    hooks.before_run(lambda ctx: log.append("run guard v1"), name="guard")
    hooks.after_run(lambda ctx: log.append("after guard"), name="guard")
    # Re-running the before_run cell replaces that guard only; the after_run guard stays.
    hooks.before_run(lambda ctx: log.append("run guard v2"), name="guard")
    assert [e.slot_names for e in hooks] == [("before_run",), ("after_run",)]
    assert hooks.names() == ["guard"] and len(hooks) == 2
    pipeline = HookPipeline(hooks)
    await pipeline.before_run(BeforeRunHookContext(**BASE, input=(AgentMessage.user("x"),)))
    await pipeline.after_run(AfterRunHookContext(**BASE, result=None))
    assert log == ["run guard v2", "after guard"]


def test_a_function_hook_takes_one_slot_of_a_class_hook_of_the_same_name():
    class Guard(AgentHook):
        async def before_tool_call(self, ctx):
            return None

        async def after_tool_call(self, ctx):
            return None

    hooks = HookRegistry()
    hooks.add(Guard(), name="guard")
    hooks.before_tool_call(lambda ctx: None, name="later")
    replacement = hooks.before_tool_call(lambda ctx: None, name="guard")
    by_slot = {s: [e.name for e in hooks.for_slot(s)] for s in (HookSlot.BEFORE_TOOL_CALL, HookSlot.AFTER_TOOL_CALL)}
    # In place: the replacement runs where the class hook ran, before "later".
    assert by_slot == {HookSlot.BEFORE_TOOL_CALL: ["guard", "later"], HookSlot.AFTER_TOOL_CALL: ["guard"]}
    assert hooks.for_slot(HookSlot.BEFORE_TOOL_CALL)[0].source is replacement
    assert hooks.for_slot(HookSlot.AFTER_TOOL_CALL)[0].source.__class__ is Guard


def test_remove_by_name_and_slot():
    hooks = HookRegistry()
    hooks.before_tool_call(lambda ctx: None, name="guard")
    hooks.after_tool_call(lambda ctx: None, name="guard")
    hooks.remove("guard", slot="after_tool_call")
    assert [e.slot_names for e in hooks] == [("before_tool_call",)]
    with pytest.raises(ArkError) as info:
        hooks.remove("guard", slot=HookSlot.AFTER_TOOL_CALL)
    assert info.value.code == "invalid_argument" and "in after_tool_call" in info.value.message
    assert "guard [before_tool_call]" in info.value.message
    with pytest.raises(ArkError) as info:
        hooks.remove("guard", slot="nowhere")
    assert "unknown hook slot" in info.value.message
    hooks.after_tool_call(lambda ctx: None, name="guard")
    hooks.remove("guard")
    assert len(hooks) == 0 and "guard" not in hooks
