"""A finished runtime is freed as soon as its last reference goes, without the cycle collector.

The runtime's hook pipeline and redactor hold it weakly, and it holds its controller
weakly (a controller kept on its own holds the runtime), so a suite that makes a
runtime per case (each with its history) does not keep finished ones alive until the
next garbage collection.
"""

from __future__ import annotations

import gc
import weakref

import arknb as ark
from arknb.state import FileStateStorage

from ._approval_kit import Tools, dangerous_turn, finish_background


def _no_cycle_collector():
    gc.collect()
    gc.disable()


async def test_a_finished_run_with_hooks_and_secrets_is_freed_by_reference_counting(tmp_path):
    tools = Tools()
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text="adding", tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        "It is 3, and the key is key-0123456789.",
    ])
    _no_cycle_collector()
    try:
        runtime = ark.AgentRuntime(model, tools=tools.all, secrets=["key-0123456789"],
                                   storage=FileStateStorage(tmp_path / "state"), session_id="freed")

        @runtime.hooks.before_tool_call
        def bump(ctx):  # a rewrite publishes a hook.decision through the pipeline
            return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"a": 1, "b": 5}))

        result = await runtime.run("What is 1 + 2?")
        assert result.stop_reason == "completed" and "[redacted]" in result.text   # the redactor reported
        assert tools.ran == [("add", (1, 5))]
        ref = weakref.ref(runtime)
        del runtime, bump
        assert ref() is None, "the finished runtime is still alive: something it owns refers back to it"
    finally:
        gc.enable()


async def test_a_runtime_after_an_approval_round_trip_is_freed_by_reference_counting():
    tools = Tools()
    _no_cycle_collector()
    try:
        runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn(), "Done.", "Again."]),
                                   tools=tools.all)
        assert (await runtime.run("go")).stop_reason == "awaiting_approval"
        [item] = runtime.controller.list_pending_approvals()
        assert (await runtime.controller.approve(item.approval_id)).ok
        await finish_background(runtime)
        assert runtime.last_result.stop_reason == "completed"
        handle = runtime.start("and again?")
        assert (await handle).text == "Again."
        ref = weakref.ref(runtime)
        del runtime, handle, item
        assert ref() is None, "the runtime is still alive after its runs finished"
    finally:
        gc.enable()


async def test_a_controller_kept_on_its_own_keeps_its_runtime_and_stays_the_same_object():
    tools = Tools()
    runtime = ark.AgentRuntime(ark.ScriptedModel([dangerous_turn(), "Done."]), tools=tools.all)
    assert runtime.controller is runtime.controller
    controller = runtime.controller
    assert (await runtime.run("go")).stop_reason == "awaiting_approval"
    ref = weakref.ref(runtime)
    del runtime
    gc.collect()
    assert ref() is not None                       # the controller holds the runtime it decides for
    assert ref().controller is controller
    [item] = controller.list_pending_approvals()
    assert (await controller.approve(item.approval_id)).ok
    assert (await finish_background(ref())).stop_reason == "completed" and tools.ran == [("clear_cache", "/tmp/cache")]
