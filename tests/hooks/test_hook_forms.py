"""Hooks cannot be bypassed by their form (issue 26 item 3).

A hook runs whether its method is sync or async, a function or a class, registered by
decorator, ``hooks.add`` or an extension; one that cannot run (a wrong signature, not
callable) is refused when it is registered, naming the slot and the fix, never skipped
at run time. ``BeforeRunHookResult.proceed`` takes the forms ``run()`` takes."""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb.runtime.extensions import Extension

LIMIT = 100


def _transfer_tool(done: list):
    @ark.tool
    def transfer(amount: int) -> str:
        """Transfer money."""
        done.append(amount)
        return f"sent {amount}"

    return transfer


def _model(amount: int = 5000) -> ark.ScriptedModel:
    return ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(
        id="c1", name="transfer", arguments_json=json.dumps({"amount": amount}))]), "ok"])


def _deny(ctx):
    if ctx.call.arguments["amount"] > LIMIT:
        return ark.ToolCallHookResult.deny(ark.ToolResult.from_text("over the limit", is_error=True), "limit")
    return None


class SyncLimit(ark.AgentHook):
    def before_tool_call(self, ctx):  # a plain def: once silently bypassed
        return _deny(ctx)


class AsyncLimit(ark.AgentHook):
    async def before_tool_call(self, ctx):
        return _deny(ctx)


class _HookExtension(Extension):
    name = "limits"

    def __init__(self, hook) -> None:
        self._hook = hook

    def hooks(self):
        return [self._hook]


def _register(runtime_kwargs: dict, form: str, flavour: str):
    """Build a runtime with the transfer limit registered in ``form``."""
    if form == "extension":
        hook = SyncLimit() if flavour == "sync" else AsyncLimit()
        return ark.AgentRuntime(**runtime_kwargs, extensions=[_HookExtension(hook)])
    runtime = ark.AgentRuntime(**runtime_kwargs)
    if form == "class":
        runtime.hooks.add(SyncLimit() if flavour == "sync" else AsyncLimit())
    elif flavour == "sync":
        runtime.hooks.before_tool_call(_deny)
    else:
        @runtime.hooks.before_tool_call
        async def limit(ctx):
            return _deny(ctx)
    return runtime


@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize("form", ["decorator", "class", "extension"])
async def test_a_limit_hook_runs_in_every_form(form, flavour):
    done: list[int] = []
    runtime = _register(dict(model=_model(), tools=[_transfer_tool(done)]), form, flavour)
    diagnostics = []
    runtime.bus.subscribe(ark.EventTypes.HOOK_DIAGNOSTIC, diagnostics.append)
    result = await runtime.run("send 5000")
    assert result.stop_reason == "completed", result.error
    assert done == [], "the transfer over the limit went through"
    assert diagnostics == []
    [tool_message] = [m for m in runtime.history if m.role == "tool"]
    assert "over the limit" in tool_message.text


async def test_a_sync_class_hook_under_the_limit_lets_the_call_through():
    done: list[int] = []
    runtime = ark.AgentRuntime(_model(amount=50), tools=[_transfer_tool(done)])
    runtime.hooks.add(SyncLimit())
    assert (await runtime.run("send 50")).stop_reason == "completed"
    assert done == [50]


async def test_a_sync_class_hook_with_a_timeout_runs_too():
    done: list[int] = []
    runtime = ark.AgentRuntime(_model(), tools=[_transfer_tool(done)])
    runtime.hooks.add(SyncLimit(), timeout=5)
    assert (await runtime.run("send 5000")).stop_reason == "completed"
    assert done == []


# -- hooks that cannot run are refused at registration -----------------------------------------


def test_a_class_hook_method_with_a_wrong_signature_is_refused_naming_the_slot_and_the_fix():
    class NoCtx(ark.AgentHook):
        def before_tool_call(self):
            return None

    with pytest.raises(ark.ArkError) as err:
        ark.AgentRuntime(ark.ScriptedModel([])).hooks.add(NoCtx())
    message = err.value.message
    assert err.value.code == "invalid_argument"
    assert "before_tool_call" in message and "NoCtx" in message and "def before_tool_call(self, ctx)" in message


def test_a_class_hook_slot_that_is_not_callable_is_refused():
    class Broken(ark.AgentHook):
        before_tool_call = "deny everything"

    with pytest.raises(ark.ArkError) as err:
        ark.AgentRuntime(ark.ScriptedModel([])).hooks.add(Broken())
    assert "before_tool_call" in err.value.message and "str" in err.value.message
    assert "def before_tool_call(self, ctx)" in err.value.message


def test_an_extension_hook_with_a_wrong_signature_is_refused_when_the_runtime_is_built():
    class TwoArgs(ark.AgentHook):
        async def after_tool_call(self, ctx, extra):
            return None

    with pytest.raises(ark.ArkError) as err:
        ark.AgentRuntime(ark.ScriptedModel([]), extensions=[_HookExtension(TwoArgs())])
    assert "after_tool_call" in err.value.message and "TwoArgs" in err.value.message


@pytest.mark.parametrize("bad", ["no_args", "two_args"])
def test_a_function_hook_with_a_wrong_signature_is_refused_by_its_decorator(bad):
    runtime = ark.AgentRuntime(ark.ScriptedModel([]))

    def no_args():
        return None

    def two_args(ctx, other):
        return None

    with pytest.raises(ark.ArkError) as err:
        runtime.hooks.before_tool_call({"no_args": no_args, "two_args": two_args}[bad])
    assert err.value.code == "invalid_argument"
    assert "before_tool_call" in err.value.message and bad in err.value.message
    assert "one argument, the context" in err.value.message
    assert list(runtime.hooks) == []


def test_a_function_with_an_optional_second_parameter_is_accepted():
    runtime = ark.AgentRuntime(ark.ScriptedModel([]))

    def guard(ctx, strict=True):
        return None

    runtime.hooks.before_tool_call(guard)
    assert [h.name for h in runtime.hooks] == ["guard"]


# -- before_run's proceed takes what run() takes -----------------------------------------------


async def test_before_run_proceed_with_a_str_replaces_the_input_with_a_user_message():
    model = ark.ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model)

    @runtime.hooks.before_run
    def mask(ctx):
        return ark.BeforeRunHookResult.proceed("my card is [redacted]")

    result = await runtime.run("my card is 4111 1111 1111 1111")
    assert result.stop_reason == "completed"
    sent = [m.text for m in model.requests[0].messages if m.role == "user"]
    assert sent == ["my card is [redacted]"]
    assert "4111" not in json.dumps([m.model_dump(mode="json") for m in runtime.history])


@pytest.mark.parametrize("value, expected", [
    (ark.AgentMessage.user("hi"), ["hi"]),
    ([ark.AgentMessage.user("a"), ark.AgentMessage.user("b")], ["a", "b"]),
    (["one ", "message"], ["one message"]),
])
def test_before_run_proceed_takes_the_forms_run_takes(value, expected):
    result = ark.BeforeRunHookResult.proceed(value)
    assert [m.text for m in result.input] == expected and all(m.role == "user" for m in result.input)


@pytest.mark.parametrize("bad", [42, [ark.AgentMessage.user("a"), 3], ""])
def test_before_run_proceed_with_a_wrong_type_says_what_to_pass(bad):
    with pytest.raises(ark.ArkError) as err:
        ark.BeforeRunHookResult.proceed(bad)
    message = err.value.message
    assert "str, str" not in message
    assert "BeforeRunHookResult.proceed" in message
    assert ("a str" in message and "AgentMessage" in message) or "empty" in message


async def test_a_wrong_proceed_in_a_hook_is_a_diagnostic_that_says_what_to_pass():
    model = ark.ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model)
    diagnostics = []
    runtime.bus.subscribe(ark.EventTypes.HOOK_DIAGNOSTIC, diagnostics.append)

    @runtime.hooks.before_run
    def wrong(ctx):
        return ark.BeforeRunHookResult.proceed(42)

    await runtime.run("hello")
    [diagnostic] = diagnostics
    assert "a str" in diagnostic.payload["message"] and "got int" in diagnostic.payload["message"]
