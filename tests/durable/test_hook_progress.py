"""Per-hook progress (DESIGN §13): every finished hook's name and decision is recorded in
its operation, so a process killed in the middle of a slot is continued by one that
runs only the hooks not yet recorded. A child runs an agent, is SIGKILLed inside the
second of three hooks of one slot, and is restored here; every hook call is counted in
a side-effect file in both processes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import arknb as ark
from arknb.durable import OperationPhase

from ._hook_child import install, make_tools, open_store, script

CHILD = Path(__file__).with_name("_hook_child.py")


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request, tmp_path):
    if request.param == "postgres":
        (tmp_path / "dsn").write_text(request.getfixturevalue("pg_dsn"))
    return request.param


async def crash(tmp_path: Path, kind: str, slot: str, *extra: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(CHILD), kind, str(tmp_path), "s1", slot, *extra,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        assert line.decode().strip() == "READY", (line, (await proc.stderr.read()).decode()[-2000:])
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()


def hook_calls(tmp_path: Path) -> Counter:
    return Counter(tuple(line.split(" ")) for line in (tmp_path / "hooks.log").read_text().splitlines())


def tool_runs(tmp_path: Path) -> Counter:
    path = tmp_path / "effects.log"
    return Counter(line.split(" ")[1] for line in path.read_text().splitlines()) if path.exists() else Counter()


async def restore_and_resume(tmp_path: Path, kind: str, slot: str, turns: list):
    store = open_store(kind, tmp_path)
    model = ark.ScriptedModel(turns)
    runtime = ark.AgentRuntime(model, tools=make_tools(tmp_path), storage=store, session_id="s1")
    install(runtime, tmp_path, slot, kill=False)
    await runtime.load()
    assert runtime.controller.list_in_doubt() == []  # no call had begun to execute
    result = await asyncio.wait_for(runtime.resume(), 60)
    assert result.stop_reason == "completed", result.error
    return store, model, runtime


def answers(runtime) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in runtime.history if m.role == "tool"}


async def test_killed_in_a_request_hook_of_the_model_call_only_the_unrecorded_hooks_run_again(tmp_path, kind):
    slot = "before_model_call"
    await crash(tmp_path, kind, slot)
    assert hook_calls(tmp_path) == {(f"{slot}_1", "turn1"): 1, (f"{slot}_2", "turn1"): 1}
    store, model, runtime = await restore_and_resume(tmp_path, kind, slot, script())
    calls = hook_calls(tmp_path)
    # The first hook finished before the kill: it is not called again for turn 1, and the
    # request it rewrote is the one sent. The second was killed while it ran: it runs again.
    assert calls[(f"{slot}_1", "turn1")] == 1 and calls[(f"{slot}_2", "turn1")] == 2
    assert calls[(f"{slot}_3", "turn1")] == 1
    assert model.requests[0].messages[-1].text == f"note from {slot}_1"
    assert all(calls[(f"{slot}_{n}", "turn2")] == 1 for n in (1, 2, 3))
    [op] = [op for op in await store.list_operations("s1") if op.purpose_key.endswith(":turn1")]
    assert [(r.hook, r.action) for r in op.records("request")] == [
        (f"{slot}_1", "rewrite"), (f"{slot}_2", "proceed"), (f"{slot}_3", "proceed")]
    assert op.input_source == f"{slot}_1"
    await runtime.aclose()
    await store.aclose()


async def test_killed_in_a_response_hook_of_the_model_call_the_rewrite_of_the_finished_hook_stands(tmp_path, kind):
    slot = "after_model_call"
    await crash(tmp_path, kind, slot)
    store, model, runtime = await restore_and_resume(tmp_path, kind, slot, ["All done."])
    calls = hook_calls(tmp_path)
    assert calls[(f"{slot}_1", "turn1")] == 1 and calls[(f"{slot}_2", "turn1")] == 2
    assert calls[(f"{slot}_3", "turn1")] == 1
    assert len(model.requests) == 1  # turn 1's saved response was not asked for again
    [turn1] = [m for m in runtime.history if m.role == "assistant" and m.tool_calls]
    assert turn1.text == f"[{slot}_1] Working."
    assert tool_runs(tmp_path) == {"c1": 1, "c2": 1}
    [op] = [op for op in await store.list_operations("s1") if op.purpose_key.endswith(":turn1")]
    assert op.raw_result["response"]["message"]["contents"][0]["text"] == "Working."  # raw kept beside effective
    assert op.result_source == f"{slot}_1"
    await runtime.aclose()
    await store.aclose()


async def test_killed_in_a_tool_request_hook_the_hooks_of_the_finished_call_and_step_do_not_run_again(tmp_path, kind):
    slot = "before_tool_call"
    await crash(tmp_path, kind, slot)
    assert tool_runs(tmp_path) == {}
    store, _, runtime = await restore_and_resume(tmp_path, kind, slot, ["All done."])
    assert hook_calls(tmp_path) == {(f"{slot}_1", "c1"): 1, (f"{slot}_2", "c1"): 1, (f"{slot}_3", "c1"): 1,
                                    (f"{slot}_1", "c2"): 1, (f"{slot}_2", "c2"): 2, (f"{slot}_3", "c2"): 1}
    # Each call ran once, with the arguments the (not repeated) first hook gave it.
    assert tool_runs(tmp_path) == {"c1": 1, "c2": 1}
    assert answers(runtime) == {"c1": "work 10 done", "c2": "work 20 done"}
    ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1")}
    assert [r.hook for r in ops["c2"].records("request")] == [
        f"{slot}_1", f"{slot}_2", f"{slot}_3", "approval_policy"]
    assert ops["c2"].input_source == f"{slot}_1" and ops["c2"].raw_input["call"]["arguments_json"] == '{"n": 2}'
    await runtime.aclose()
    await store.aclose()


async def test_a_deny_committed_before_the_kill_stands_without_its_hook_running_again(tmp_path, kind):
    slot = "before_tool_call"
    await crash(tmp_path, kind, slot, "deny")
    store, _, runtime = await restore_and_resume(tmp_path, kind, slot, ["All done."])
    calls = hook_calls(tmp_path)
    assert calls[(f"{slot}_1", "c1")] == 1 and calls[(f"{slot}_2", "c1")] == 0  # the deny short-circuited
    assert calls[(f"{slot}_2", "c2")] == 2
    assert tool_runs(tmp_path) == {"c2": 1}
    assert answers(runtime)["c1"] == "c1 refused by policy"
    [op] = [op for op in await store.list_operations("s1") if op.purpose_key.endswith(":c1")]
    assert op.completed and op.status == "denied" and op.result_source == f"{slot}_1" and not op.attempts
    await runtime.aclose()
    await store.aclose()


async def test_killed_in_a_tool_response_hook_the_finished_hooks_and_their_messages_are_kept(tmp_path, kind):
    slot = "after_tool_call"
    await crash(tmp_path, kind, slot)
    assert tool_runs(tmp_path) == {"c1": 1, "c2": 1}
    store, _, runtime = await restore_and_resume(tmp_path, kind, slot, ["All done."])
    assert hook_calls(tmp_path) == {(f"{slot}_1", "c1"): 1, (f"{slot}_2", "c1"): 1, (f"{slot}_3", "c1"): 1,
                                    (f"{slot}_1", "c2"): 1, (f"{slot}_2", "c2"): 2, (f"{slot}_3", "c2"): 1}
    assert tool_runs(tmp_path) == {"c1": 1, "c2": 1}  # no tool ran again
    assert answers(runtime) == {"c1": f"[{slot}_1] work 1 done", "c2": f"[{slot}_1] work 2 done"}
    # Each injected message once, in call order, after the tool answers.
    texts = [m.text for m in runtime.history if m.role == "user"]
    assert texts == ["Do the work", "injected for c1", "injected for c2"]
    ops = {op.purpose_key.split(":")[-1]: op for op in await store.list_operations("s1")}
    for call_id in ("c1", "c2"):
        op = ops[call_id]
        assert op.phase is OperationPhase.COMPLETED and op.result_source == f"{slot}_1"
        assert op.raw_result["contents"][0]["text"] == f"work {call_id[1]} done"  # raw beside effective
        assert [r.hook for r in op.records("response")] == [f"{slot}_1", f"{slot}_2", f"{slot}_3"]
        assert op.records("response")[0].injected[0]["contents"][0]["text"] == f"injected for {call_id}"
    await runtime.aclose()
    await store.aclose()


async def test_a_recorded_deferral_keeps_its_item_kind_and_detail_for_a_restore():
    """A hook's defer with an approval kind (a plan review, ...) is recorded with that kind
    and detail, so a restore that replays the recorded decision defers the same item."""
    from arknb.durable import HookRecord, Operation
    from arknb.durable._interceptors import deferral
    from arknb.hooks import HookPipeline, HookRegistry, HookStep, ToolCallHookContext, ToolCallHookResult

    registry = HookRegistry()

    def review(ctx):
        return ark.ToolCallHookResult.defer("review the plan", kind="plan_review", detail={"plan": ["a", "b"]})

    registry.register("before_tool_call", review, name="review")
    steps = []

    class Progress:
        def recorded(self, hook):
            return False

        async def before_hook(self, hook):
            return None

        def after_hook(self, step, value):
            steps.append(step)

    call = ark.ToolCall(id="c1", name="write_todos", arguments_json="{}", index=0)
    ctx = ToolCallHookContext(session_id="s", run_id="r", state=ark.AgentState(session_id="s"), call=call,
                              model_message=ark.AgentMessage.assistant("", tool_calls=[call]), available_tools=(),
                              batch_id="b")
    decision = await HookPipeline(registry).before_tool_call(ctx, Progress())
    assert decision.action.value == "defer"
    [step] = steps
    assert isinstance(step, HookStep) and step.detail == {"kind": "plan_review", "detail": {"plan": ["a", "b"]}}
    record = HookRecord(slot="before_tool_call", action=step.action, phase="request", hook=step.hook,
                        reason=step.reason, detail=step.detail)
    operation = Operation(operation_id="op_1", session_id="s", run_id="r", kind="tool_call", purpose_key="r:c1",
                          request_event_id="e", hook_progress=(record,))
    restored = Operation.from_json(operation.to_json())  # as a new process reads it
    assert deferral(restored) == ("review the plan", "plan_review", {"plan": ["a", "b"]})
    plain = operation.copy_with({"hook_progress": (HookRecord(slot="before_tool_call", action="defer",
                                                              phase="request", hook="approval_policy"),)})
    assert deferral(plain) == ("deferred by hook 'approval_policy'", "tool", None)
