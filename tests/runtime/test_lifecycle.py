"""Lifecycle (DESIGN §14, issue 10 item 8): ``aclose(grace)`` and the process-exit hook.

A closed runtime never leaves its session saved as if a run were still in progress: the
run is saved suspended (resumable on a new runtime) or ended with its stop reason.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading

import pytest

import arknb as ark
from arknb import EventTypes, ScriptedTurn

from ._approval_kit import EventLog, assert_history_paired, call


class Hang:
    """Tools that never end unless the test lets them: one async, one blocking a thread."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = threading.Event()
        loop = asyncio.get_running_loop()

        @ark.tool
        async def wait_forever(x: int) -> str:
            """Wait for ever."""
            self.entered.set()
            await asyncio.Event().wait()
            return "never"

        @ark.tool
        def block_forever(x: int) -> str:
            """Block a thread for ever (until the test ends)."""
            loop.call_soon_threadsafe(self.entered.set)
            self.release.wait()
            return "released"

        self.tools = [wait_forever, block_forever]


def hanging_runtime(storage, tool_name: str, hang: Hang, **options) -> ark.AgentRuntime:
    return ark.AgentRuntime(ark.ScriptedModel([
        ScriptedTurn(text="Working.", tool_calls=[call("c1", tool_name, x=1)]), "never reached"]),
        tools=hang.tools, storage=storage, session_id="closing", **options)


@pytest.mark.parametrize("tool_name", ["wait_forever", "block_forever"])
async def test_aclose_during_a_tool_that_never_ends_cancels_and_saves_the_run_ended(tmp_path, tool_name):
    storage = ark.FileStateStorage(tmp_path)
    hang = Hang()
    runtime = hanging_runtime(storage, tool_name, hang)
    log = EventLog(runtime)
    handle = runtime.start("go")
    await hang.entered.wait()
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        result = await runtime.aclose(grace=0.3)
        took = loop.time() - started
    finally:
        hang.release.set()

    assert result.stop_reason == "cancelled" and handle.done
    assert 0.3 <= took < 5
    assert "runtime closed" in result.error.message and "safe checkpoint within 0.3 s" in result.error.message
    saved = await storage.load("closing")
    assert saved.is_running is False and saved.last_stop_reason == "cancelled"
    assert saved.last_error.code == "cancelled" and "runtime closed" in saved.last_error.message
    assert_history_paired(saved.history)  # the hanging call is answered, never left open
    types = log.types()
    assert types[-2:] == [EventTypes.AGENT_CANCELLED, EventTypes.RUNTIME_DETACHED]
    detached = log.of(EventTypes.RUNTIME_DETACHED)[0].payload
    assert detached["reason"] == "closed" and detached["last_stop_reason"] == "cancelled"
    assert detached["resumable"] is False


async def test_aclose_lets_a_run_reach_its_next_checkpoint_and_saves_it_suspended(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    steps: list[int] = []

    @ark.tool
    async def step(n: int) -> str:
        """One slow step."""
        steps.append(n)
        await asyncio.sleep(0.02)
        return f"step {n} done"

    turns = [ScriptedTurn(tool_calls=[call(f"c{n}", "step", n=n)]) for n in range(1, 16)] + ["all done"]
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[step], storage=storage, session_id="slow",
                               max_turns=40)
    runtime.start("go")
    while len(steps) < 2:
        await asyncio.sleep(0.01)
    result = await runtime.aclose(grace=5.0)

    assert result.stop_reason == "suspended" and result.resumable
    saved = await storage.load("slow")
    assert saved.is_running is True and saved.last_stop_reason == "suspended"
    assert_history_paired(saved.history)
    done_steps = len(steps)
    assert done_steps < 15

    rest = [ScriptedTurn(tool_calls=[call(f"d{n}", "step", n=n)]) for n in range(done_steps + 1, 16)] + ["all done"]
    again = await ark.AgentRuntime.restore("slow", storage=storage, model=ark.ScriptedModel(rest), tools=[step],
                                           max_turns=40)
    resumed = await again.resume()
    assert resumed.stop_reason == "completed" and resumed.text == "all done"
    assert steps == list(range(1, 16))  # every step ran exactly once across the close


async def test_a_closed_runtime_refuses_runs_and_decisions_and_releases_its_bus():
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), session_id="done")
    log = EventLog(runtime)
    assert await runtime.aclose() is None  # nothing was running
    assert runtime.closed
    assert log.types() == [EventTypes.RUNTIME_DETACHED]
    for attempt in (lambda: runtime.start("again"), lambda: runtime.start_resume()):
        with pytest.raises(ark.ArkError) as info:
            attempt()
        assert (info.value.layer, info.value.code) == ("runtime", "runtime_closed")
        assert "session_id='done'" in info.value.message
    with pytest.raises(ark.ArkError, match="runtime_closed|was closed"):
        await runtime.run("again")
    decision = await runtime.controller.approve("anything")
    assert decision.ok is False and decision.error.code == "runtime_closed"
    assert runtime.bus.closed
    assert runtime.cancel() is False
    assert await runtime.aclose() is None  # closing again is harmless


async def test_a_shared_bus_stays_open_after_aclose():
    bus = ark.EventBus()
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), event_bus=bus)
    await runtime.aclose()
    assert not bus.closed


async def test_two_acloses_at_once_close_once_and_get_the_same_result(tmp_path):
    hang = Hang()
    runtime = hanging_runtime(ark.FileStateStorage(tmp_path), "wait_forever", hang)
    log = EventLog(runtime)
    runtime.start("go")
    await hang.entered.wait()
    first, second = await asyncio.gather(runtime.aclose(grace=0.2), runtime.aclose(grace=0.2))
    assert first is second and first.stop_reason == "cancelled"
    assert len(log.of(EventTypes.RUNTIME_DETACHED)) == 1


async def test_a_run_paused_for_approval_is_left_saved_as_it_is(tmp_path):
    storage = ark.FileStateStorage(tmp_path)

    @ark.tool(risk="dangerous")
    def wipe(path: str) -> str:
        """Delete a folder."""
        return f"wiped {path}"

    turns = [ScriptedTurn(tool_calls=[call("c1", "wipe", path="/tmp/x")]), "wiped it"]
    runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[wipe], storage=storage, session_id="paused")
    paused = await runtime.run("wipe it")
    assert paused.stop_reason == "awaiting_approval"
    assert await runtime.aclose() is None
    (item,) = runtime.controller.list_pending_approvals()
    refused = await runtime.controller.approve(item.approval_id)
    assert refused.error.code == "runtime_closed"

    again = await ark.AgentRuntime.restore("paused", storage=storage, model=ark.ScriptedModel(["wiped it"]),
                                           tools=[wipe])
    decided = await again.controller.approve(item.approval_id)
    assert decided.ok
    result = await again.current_run.wait()
    assert result.stop_reason == "completed"


async def test_aclose_rejects_a_bad_grace():
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]))
    for grace in (-1, "2", None, True):
        with pytest.raises(ark.ArkError) as info:
            await runtime.aclose(grace=grace)
        assert info.value.code == "invalid_argument"
    assert not runtime.closed


async def test_the_runtime_is_an_async_context_manager(tmp_path):
    async with ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=ark.FileStateStorage(tmp_path),
                                session_id="ctx") as runtime:
        assert (await runtime.run("hello")).text == "hi"
    assert runtime.closed


# --- the process ends with a run still active ------------------------------------------------

CHILD = textwrap.dedent('''
    import asyncio, sys
    import arknb as ark

    directory, mode = sys.argv[1], sys.argv[2]

    @ark.tool
    async def wait_forever(x: int) -> str:
        """Wait for ever."""
        print("TOOL STARTED", flush=True)
        await asyncio.Event().wait()

    def make():
        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[
            ark.ToolCall(id="c1", name="wait_forever", arguments_json='{"x": 1}')]), "never"])
        return ark.AgentRuntime(model, tools=[wait_forever], storage=ark.FileStateStorage(directory),
                                session_id="child")

    async def start_and_leave():
        runtime = make()
        runtime.start("go")
        while runtime.state.current_loop_count < 1 or not runtime.history[-1].tool_calls:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        return runtime

    if mode == "asyncio_run":      # asyncio.run returns with the run still active
        asyncio.run(start_and_leave())
    else:                          # the loop is left stopped, not closed, as exit() in a kernel does
        loop = asyncio.new_event_loop()
        runtime = loop.run_until_complete(start_and_leave())
    print("MAIN DONE", flush=True)
''')


@pytest.mark.parametrize("mode", ["asyncio_run", "stopped_loop"])
def test_a_process_that_ends_with_a_run_active_saves_it_ended(tmp_path, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    sessions = tmp_path / "sessions"
    proc = subprocess.run([sys.executable, str(script), str(sessions), mode], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "TOOL STARTED" in proc.stdout and "MAIN DONE" in proc.stdout
    saved = json.loads((sessions / "child.json").read_text())
    assert saved["is_running"] is False and saved["last_stop_reason"] == "cancelled", saved
    assert saved["last_error"]["code"] == "cancelled"
    state = ark.AgentState.from_json(json.dumps(saved))
    assert_history_paired(state.history)


async def test_aclose_of_a_runtime_whose_saved_state_cannot_be_read_closes_without_raising(tmp_path):
    (tmp_path / "broken.json").write_text("{ not json")
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=ark.FileStateStorage(tmp_path), session_id="broken")
    handle = runtime.start("hello")  # loads first, in the task: the load error ends it
    assert await runtime.aclose(grace=1.0) is None
    with pytest.raises(ark.ArkError) as info:
        await handle
    assert info.value.code == "state_corrupt"  # the run's own error stays with its handle
    assert runtime.closed and (tmp_path / "broken.json").read_text() == "{ not json"  # never overwritten
