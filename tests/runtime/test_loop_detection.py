"""Loop detection (DESIGN §7): canonical signatures, sliding window, threshold, diagnose,
and the optional ``on_detect="ask"`` escalation through the approval machinery."""

from __future__ import annotations

import pytest

from arknb import ArkError, EventTypes, LoopDetector, ScriptedTurn, ToolCall
from arknb.runtime.loop_detector import tool_signature

from ._approval_kit import assert_history_paired, call, finish_background, make_runtime


def add_turn(i: int, **arguments) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[call(f"c{i}", "add", **(arguments or {"a": 1, "b": 1}))])


def test_signature_is_canonical_json_key_order_irrelevant():
    one = ToolCall(id="x", name="add", arguments_json='{"a": 1, "b": {"y": 2, "x": [1, 2]}}')
    two = ToolCall(id="y", name="add", arguments_json='{"b":{"x":[1,2],"y":2},   "a":1}')
    other_tool = ToolCall(id="z", name="sub", arguments_json='{"a": 1, "b": {"x": [1, 2], "y": 2}}')
    other_args = ToolCall(id="w", name="add", arguments_json='{"a": 1, "b": {"x": [2, 1], "y": 2}}')

    assert tool_signature(one) == tool_signature(two) == 'add:{"a":1,"b":{"x":[1,2],"y":2}}'
    assert tool_signature(one) != tool_signature(other_tool)
    assert tool_signature(one) != tool_signature(other_args)  # list order is meaningful
    assert tool_signature(ToolCall(id="v", name="add", arguments_json="{not json")) == "add:{not json"


def test_detector_counts_within_a_sliding_window():
    detector = LoopDetector(threshold=3, window=4)
    same = ToolCall(id="1", name="add", arguments_json='{"a": 1}')
    other = [ToolCall(id=str(i), name="add", arguments_json=f'{{"a": {i}}}') for i in range(10, 13)]

    assert detector.observe([same]) is None
    assert detector.observe([same]) is None
    assert detector.observe(other) is None  # window: same, o10, o11, o12 (one `same` slid out)
    assert detector.observe([same]) is None  # window: o10, o11, o12, same -> 1 (3 without the window)
    assert detector.observe([same]) is None  # 2
    hit = detector.observe([ToolCall(id="9", name="add", arguments_json='{ "a" : 1 }')])
    assert hit is not None and hit.count == 3 and hit.threshold == 3 and hit.window == 4 and hit.tool == "add"


def test_detector_rejects_impossible_settings():
    for kwargs in ({"threshold": 1}, {"threshold": 3, "window": 2}, {"on_detect": "explode"},
                   {"diagnose": "not callable"}):
        with pytest.raises(ArkError) as info:
            LoopDetector(**kwargs)
        assert info.value.code == "invalid_argument"


async def test_threshold_ends_run_with_loop_detected():
    turns = [add_turn(i) for i in range(3)] + ["never reached"]
    runtime, tools, log = make_runtime(turns, loop_detector=LoopDetector(threshold=3, window=8))

    result = await runtime.run("loop please")

    assert result.stop_reason == "loop_detected" and result.turns == 3
    assert result.error.code == "loop_detected" and result.error.layer == "runtime"
    assert len(tools.ran) == 2  # the third identical call never ran
    [event] = log.of(EventTypes.LOOP_DETECTED)
    assert event.payload["tool"] == "add" and event.payload["count"] == 3
    assert event.payload["threshold"] == 3 and event.payload["window"] == 8 and event.payload["mode"] == "stop"
    assert event.payload["signature"] == 'add:{"a":1,"b":1}'
    assert log.types()[-1] == EventTypes.AGENT_ERROR
    assert_history_paired(runtime.history)
    assert runtime.model.remaining == 1


async def test_varied_arguments_are_not_a_loop():
    turns = [add_turn(i, a=i, b=1) for i in range(5)] + ["Done."]
    runtime, tools, log = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=8))

    result = await runtime.run("count")

    assert result.stop_reason == "completed" and len(tools.ran) == 5
    assert not log.of(EventTypes.LOOP_DETECTED)


async def test_key_order_does_not_hide_a_loop():
    turns = [ScriptedTurn(tool_calls=[ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
             ScriptedTurn(tool_calls=[ToolCall(id="c2", name="add", arguments_json='{"b":2,"a":1}')]), "x"]
    runtime, _, _ = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4))

    assert (await runtime.run("go")).stop_reason == "loop_detected"


async def test_async_diagnose_explains_the_loop():
    seen = []

    async def diagnose(hit, history):
        seen.append((hit.count, len(history)))
        return f"the model keeps adding {hit.tool}"

    runtime, _, log = make_runtime([add_turn(i) for i in range(2)],
                                   loop_detector=LoopDetector(threshold=2, window=4, diagnose=diagnose))
    result = await runtime.run("go")

    assert result.error.message == "the model keeps adding add"
    assert log.of(EventTypes.LOOP_DETECTED)[0].payload["message"] == "the model keeps adding add"
    assert seen and seen[0][0] == 2 and seen[0][1] > 0


async def test_diagnose_failure_degrades_to_plain_message():
    async def diagnose(hit, history):
        raise RuntimeError("diagnosis model offline")

    runtime, _, log = make_runtime([add_turn(i) for i in range(2)],
                                   loop_detector=LoopDetector(threshold=2, window=4, diagnose=diagnose))
    result = await runtime.run("go")

    assert result.stop_reason == "loop_detected"  # not failed: the diagnosis is optional
    assert result.error.message.startswith("tool call add:")
    assert "repeated 2 times" in result.error.message and "diagnosis model offline" in result.error.message


async def test_loop_detection_resets_with_new_input():
    turns = [add_turn(0), "one", add_turn(1), "two"]
    runtime, _, _ = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4))

    assert (await runtime.run("first")).stop_reason == "completed"
    assert (await runtime.run("second")).stop_reason == "completed"


async def test_default_detector_stops_on_three_in_eight():
    detector = LoopDetector()
    assert (detector.threshold, detector.window, detector.on_detect) == (3, 8, "stop")


# -- on_detect="ask": a detected loop becomes a decision for a human ---------------------


async def test_ask_mode_turns_a_loop_into_a_pending_decision():
    turns = [add_turn(i) for i in range(2)] + ["Done."]
    runtime, tools, log = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4, on_detect="ask"))

    result = await runtime.run("go")

    assert result.stop_reason == "awaiting_approval" and result.resumable
    [item] = runtime.controller.list_pending_approvals()
    assert item.tool_call.id == "c1" and "loop detected" in item.reason
    assert log.of(EventTypes.APPROVAL_REQUIRED)[0].payload["kind"] == "loop"
    assert log.of(EventTypes.LOOP_DETECTED)[0].payload["mode"] == "ask"
    assert len(tools.ran) == 1  # the looping call waits for the decision


async def test_ask_mode_approve_continues():
    turns = [add_turn(i) for i in range(3)] + ["Done."]
    runtime, tools, log = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4, on_detect="ask"))
    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()

    await runtime.controller.approve(item.approval_id)
    result = await finish_background(runtime)

    # Approving forgives this signature: the same call again is not asked about twice.
    assert result.stop_reason == "completed" and result.text == "Done."
    assert len(tools.ran) == 3 and len(log.of(EventTypes.APPROVAL_REQUIRED)) == 1
    assert_history_paired(runtime.history)


async def test_ask_mode_deny_stops_with_loop_detected():
    turns = [add_turn(i) for i in range(2)] + ["never"]
    runtime, tools, log = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4, on_detect="ask"))
    await runtime.run("go")
    [item] = runtime.controller.list_pending_approvals()

    await runtime.controller.deny(item.approval_id, "stop looping")
    result = await finish_background(runtime)

    assert result.stop_reason == "loop_detected" and result.error.code == "loop_detected"
    assert len(tools.ran) == 1 and runtime.model.remaining == 1
    assert runtime.state.pending_approval is None
    assert_history_paired(runtime.history)


async def test_ask_mode_with_a_dangerous_looping_call_still_asks_for_the_tool():
    turns = [ScriptedTurn(tool_calls=[call(f"c{i}", "clear_cache", path="/x")]) for i in range(2)] + ["Done."]
    runtime, tools, _ = make_runtime(turns, loop_detector=LoopDetector(threshold=2, window=4, on_detect="ask"))
    await runtime.run("go")
    await runtime.controller.approve_all()  # first call: the tool approval
    await finish_background(runtime)
    [loop_item] = runtime.controller.list_pending_approvals()
    assert "loop detected" in loop_item.reason

    await runtime.controller.approve(loop_item.approval_id)  # continue the loop...
    await finish_background(runtime)
    [tool_item] = runtime.controller.list_pending_approvals()  # ...but the dangerous call still needs a yes
    assert "dangerous" in tool_item.reason
    await runtime.controller.approve(tool_item.approval_id)
    assert (await finish_background(runtime)).stop_reason == "completed"
    assert tools.ran == [("clear_cache", "/x")] * 2


async def test_loop_count_survives_a_restore():
    from arknb import FileStateStorage, ScriptedModel, ScriptedTurn, AgentRuntime, ToolCall, tool
    import tempfile

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tool(risk="dangerous")
    def wipe(path: str) -> str:
        """Wipe."""
        return "wiped"

    def same(i):
        return ScriptedTurn(tool_calls=[ToolCall(id=f"a{i}", name="add", arguments_json='{"a": 1, "b": 2}')])

    storage = FileStateStorage(tempfile.mkdtemp())
    first = AgentRuntime(ScriptedModel([same(1), same(2), ScriptedTurn(
        tool_calls=[ToolCall(id="w", name="wipe", arguments_json='{"path": "/tmp"}')])]),
        tools=[add, wipe], storage=storage, session_id="loops")
    assert (await first.run("go")).stop_reason == "awaiting_approval"
    restored = await AgentRuntime.restore("loops", storage=storage, model=ScriptedModel([same(3), "unreachable"]),
                                          tools=[add, wipe])
    [item] = restored.controller.list_pending_approvals()
    await restored.controller.approve(item.approval_id)
    result = await restored.current_run
    # Two identical calls before the restart and the third after it make the loop.
    assert result.stop_reason == "loop_detected"
