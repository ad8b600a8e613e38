"""Durable graph steps (DESIGN §16, issue 23 item 2): a graph runs in a child process that
is SIGKILLed at each kind of step (a function node, an agent node mid-tool, a map with
half its items done, a human node waiting); the run is restored here and every node's
side effects are counted in a file: finished steps 0 extra runs, in-doubt steps listed,
the graph completes. On SQLite and on PostgreSQL (tests/durable/conftest.py starts one)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest

import arknb as ark

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _crash_graphs import Verdict, build, build_plan, open_store  # noqa: E402

CHILD = Path(__file__).with_name("_graph_child.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgres"])
def place(request, tmp_path):
    """``(kind, where)`` of a fresh store: a SQLite folder or a PostgreSQL database."""
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("pg_dsn")
    return "sqlite", str(tmp_path)


class Child:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, place, scenario: str, effects: Path, mode: str, stop_at: str = "",
                    idempotent: bool = False) -> Child:
        kind, where = place
        proc = await asyncio.create_subprocess_exec(
            sys.executable, str(CHILD), where, kind, scenario, str(effects), mode, stop_at,
            "idempotent" if idempotent else "", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(os.environ, PYTHONPATH=str(ROOT)))
        return cls(proc)

    async def line(self) -> str:
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 90)
        if not raw:
            raise AssertionError((await self.proc.stderr.read()).decode()[-3000:])
        return raw.decode().strip()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        assert self.proc.returncode == -signal.SIGKILL


async def crash_at(place, scenario: str, effects: Path, stop_at: str, *, idempotent: bool = False) -> None:
    child = await Child.start(place, scenario, effects, "run", stop_at, idempotent)
    try:
        assert await child.line() == f"AT {stop_at}"
    finally:
        await child.kill()


def counts(effects: Path) -> Counter:
    return Counter(effects.read_text().split()) if effects.exists() else Counter()


async def restore(place, scenario: str, effects: Path, *, idempotent: bool = False, turns=None):
    store = open_store(*place)
    graph = build(scenario, store, effects, idempotent=idempotent, turns=turns)
    run = await graph.restore("g1", storage=store)
    return store, run


async def close(store, run) -> None:
    await run.aclose()
    await store.aclose()


async def test_a_function_node_killed_mid_step_is_in_doubt_and_finished_steps_never_rerun(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    await crash_at(place, "function", effects, "slow")
    store, run = await restore(place, "function", effects)
    try:
        assert run.status == "awaiting_human"
        (item,) = run.controller.list_in_doubt()
        assert (item.kind, item.node, item.step) == ("in_doubt", "slow", 2)
        assert counts(effects) == Counter({"research": 1, "slow": 1})   # nothing ran again by itself
        await run.controller.mark_done(item.item_id, {"answer": "done by hand"})
        await run.wait()
        assert run.status == "completed"
        assert run.state.answer == "done by hand" and run.state.notes == ["notes on tides", "finished"]
        assert counts(effects) == Counter({"research": 1, "slow": 1, "finish": 1})
    finally:
        await close(store, run)


async def test_an_idempotent_function_node_runs_again_after_the_crash(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    await crash_at(place, "function", effects, "slow", idempotent=True)
    store, run = await restore(place, "function", effects, idempotent=True)
    try:
        assert run.status == "completed" and run.state.answer == "slow answer"
        assert counts(effects) == Counter({"research": 1, "slow": 2, "finish": 1})
    finally:
        await close(store, run)


async def test_an_agent_node_killed_mid_tool_resumes_its_child_session(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    await crash_at(place, "agent", effects, "publish")
    # the restored child's model has only the turn after the tool left: the first is never asked again
    store, run = await restore(place, "agent", effects, turns=["Published it."])
    try:
        assert run.status == "awaiting_human"
        (item,) = run.controller.list_in_doubt()
        assert item.node == "writer" and item.item_id.startswith("writer/") and item.detail["tool"] == "publish"
        await run.controller.mark_done(item.item_id, "published")
        await run.wait()
        assert run.status == "completed", run.error
        assert run.state.answer == "Published it."
        assert counts(effects) == Counter({"research": 1, "publish": 1, "finish": 1})
    finally:
        await close(store, run)


async def test_a_typed_agent_node_killed_mid_tool_resumes_and_fills_its_field_typed(place, tmp_path) -> None:
    # The node asked its child (a runtime with no output_type) for a Verdict; the restored
    # child, in this new process, asks for a Verdict again (found where it was defined).
    effects = tmp_path / "effects.log"
    await crash_at(place, "typed_agent", effects, "publish")
    store, run = await restore(place, "typed_agent", effects,
                               turns=[ark.ScriptedTurn(output=Verdict(published=True, where="blog"))])
    try:
        assert run.status == "awaiting_human"
        (item,) = run.controller.list_in_doubt()
        await run.controller.mark_done(item.item_id, "published")
        await run.wait()
        assert run.status == "completed", run.error
        assert run.state.verdict == Verdict(published=True, where="blog")
        assert counts(effects) == Counter({"research": 1, "publish": 1, "finish": 1})
    finally:
        await close(store, run)


async def test_a_map_killed_half_done_runs_only_the_other_half(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    await crash_at(place, "map", effects, "item5")
    store, run = await restore(place, "map", effects)
    try:
        assert run.status == "awaiting_human"
        (item,) = run.controller.list_in_doubt()
        assert item.item_id == "g1:2:parts[5]"
        await run.controller.rerun(item.item_id)
        await run.wait()
        assert run.status == "completed"
        assert run.state.parts == [f"part {i}" for i in range(10)]
        expected = Counter({f"item{i}": 1 for i in range(10)}) + Counter({"item5": 1, "research": 1, "finish": 1})
        assert counts(effects) == expected   # items 0-4 never again; item 5 again because a person said so
    finally:
        await close(store, run)


async def test_a_graph_waiting_for_a_person_is_answered_in_a_new_process(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    child = await Child.start(place, "human", effects, "run")
    try:
        assert await child.line() == "WAITING awaiting_human"
    finally:
        await child.kill()
    store, run = await restore(place, "human", effects)
    try:
        assert run.status == "awaiting_human"
        (item,) = run.controller.list_pending()
        assert item.kind == "human" and item.question == "Publish 'notes on tides'?"
        with pytest.raises(ark.ArkError) as info:
            await run.controller.answer_human(item.item_id, "maybe")
        assert info.value.code == "human_answer_invalid"
        await run.controller.answer_human(item.item_id, True)
        await run.wait()
        assert run.status == "completed" and run.state.approved is True
        assert counts(effects) == Counter({"research": 1, "finish": 1})
    finally:
        await close(store, run)


async def test_two_processes_restoring_one_graph_run_get_one_owner(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    first = await Child.start(place, "human", effects, "run")
    try:
        assert await first.line() == "WAITING awaiting_human"
    finally:
        await first.kill()
    holder = await Child.start(place, "human", effects, "hold")
    try:
        assert await holder.line() == "HELD awaiting_human"
        rival = await Child.start(place, "human", effects, "hold")
        try:
            assert await rival.line() == "LOCKED session_locked"
        finally:
            await rival.proc.wait()
        store = open_store(*place)
        graph = build("human", store, effects)
        with pytest.raises(ark.ArkError) as info:
            await graph.restore("g1", storage=store)
        assert info.value.code == "session_locked"
        taken = await graph.restore("g1", storage=store, takeover=True)   # takeover bumps the generation
        assert taken.status == "awaiting_human"
        # the old owner's next commit fails with lease_lost and writes nothing
        holder.proc.stdin.write(b"answer\n")
        await holder.proc.stdin.drain()
        assert await holder.line() == "ANSWER lease_lost"
        await taken.controller.answer_human(taken.pending[0].item_id, False)   # the new owner's answer stands
        await taken.wait()
        assert taken.status == "awaiting_human" and taken.state.approved is False  # routed back, asking again
        assert counts(effects) == Counter({"research": 2})
        await close(store, taken)
    finally:
        await holder.kill()


async def test_plan_and_execute_killed_in_its_second_executor_never_reruns_the_first(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    await crash_at(place, "plan", effects, "fetch-dover")
    store = open_store(*place)
    # the restored planner's model answers; the first executor's session is finished and reused
    team = build_plan(store, effects, planner_turns=[], restored=True)
    run = await team.restore("g1", storage=store)
    try:
        assert run.status == "completed", (run.error, run.pending)
        assert run.state.answer == "Both ports fetched."
        assert counts(effects) == Counter({"fetch-brest": 1, "fetch-dover": 2})  # dover's fetch is idempotent
    finally:
        await close(store, run)


async def test_executors_approvals_are_decided_at_the_restored_planners_controller_after_a_kill(place, tmp_path) -> None:
    effects = tmp_path / "effects.log"
    child = await Child.start(place, "plan_approval", effects, "run")
    try:
        assert await child.line() == "WAITING awaiting_human"   # both executors wait for fetch's approval
    finally:
        await child.kill()
    assert counts(effects) == Counter()
    store = open_store(*place)
    team = build_plan(store, effects, planner_turns=[], restored=True, dangerous=True)
    run = await team.restore("g1", storage=store)
    try:
        assert run.status == "awaiting_human"
        controller = team.planners[0].controller    # the planner runtime's own controller
        brest, dover = controller.list_pending_approvals()
        assert [i.approval_id.split("/")[0] for i in (brest, dover)] == ["fetcher.1", "fetcher.2"]
        assert (await controller.approve(brest.approval_id)).ok
        assert (await controller.deny(dover.approval_id, "not dover")).ok
        handle = team.planners[0].current_run
        if handle is not None:
            await asyncio.wait_for(handle.wait(), 30)
        await asyncio.wait_for(run.wait(), 30)
        assert run.status == "completed", (run.error, run.pending)
        assert run.state.answer == "Both ports fetched."
        assert counts(effects) == Counter({"fetch-brest": 1})   # approved: ran once; denied: never
    finally:
        await close(store, run)
