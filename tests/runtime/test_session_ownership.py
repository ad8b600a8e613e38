"""Sessions continue, never get overwritten; one owner per session in a process (DESIGN §7).

A runtime created with the id of a saved session loads it before its first run or
decision; ``fresh=True`` discards it; an unreadable saved state is never overwritten.
A newer runtime of the same session on the same storage detaches the older one (a
notebook cell run again), which is freed once nobody holds it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedModel, ScriptedTurn
from arknb.runtime import _session

from ._approval_kit import EventLog, Tools, assert_history_paired, call, dangerous_turn


def _runtime(storage, turns, session_id="s", tools: Tools | None = None, **options) -> ark.AgentRuntime:
    tools = tools or Tools()
    return ark.AgentRuntime(ScriptedModel(turns), tools=tools.all, storage=storage, session_id=session_id,
                            **options)


# -- continuing a saved session ------------------------------------------------------------------


async def test_a_runtime_with_the_id_of_a_saved_session_continues_it(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = _runtime(storage, ["Hello, Ada."])
    await first.run("I am Ada.")

    model = ScriptedModel(["You are Ada."])
    second = ark.AgentRuntime(model, storage=ark.FileStateStorage(tmp_path), session_id="s")
    result = await second.run("Who am I?")

    assert result.stop_reason == "completed"
    assert [m.text for m in model.requests[0].messages] == ["I am Ada.", "Hello, Ada.", "Who am I?"]
    saved = await storage.load("s")
    assert [m.text for m in saved.history] == ["I am Ada.", "Hello, Ada.", "Who am I?", "You are Ada."]
    assert saved.revision == second.state.revision > first.state.revision


async def test_load_publishes_state_loaded_once_with_revision_messages_and_pending_approval(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await _runtime(storage, [dangerous_turn()]).run("clear it")

    runtime = _runtime(ark.FileStateStorage(tmp_path), ["ok"])
    log = EventLog(runtime)
    assert not runtime.loaded and runtime.state.history == ()  # nothing read yet
    assert runtime.controller.list_pending_approvals() == []

    state = await runtime.load()
    await runtime.load()  # once only

    [loaded] = log.of(EventTypes.STATE_LOADED)
    saved = await storage.load("s")
    assert loaded.payload == {"revision": saved.revision, "messages": 2, "pending_approval": True}
    assert loaded.session_id == "s"
    assert runtime.loaded and state == runtime.state and state.revision == saved.revision
    assert [i.tool_call.name for i in runtime.controller.list_pending_approvals()] == ["clear_cache"]


async def test_a_session_without_saved_state_loads_quietly(tmp_path):
    runtime = _runtime(ark.FileStateStorage(tmp_path), ["hi"])
    log = EventLog(runtime)
    assert (await runtime.load()).revision == 0
    assert log.of(EventTypes.STATE_LOADED) == [] and runtime.loaded


def test_a_runtime_with_a_generated_session_id_has_nothing_to_load():
    runtime = ark.AgentRuntime(ScriptedModel(["hi"]))
    assert runtime.loaded


async def test_a_pending_approval_of_a_saved_session_blocks_new_input_of_a_new_runtime(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await _runtime(storage, [dangerous_turn()]).run("clear it")

    runtime = _runtime(ark.FileStateStorage(tmp_path), ["Done."])
    with pytest.raises(ArkError) as info:
        await runtime.run("something else")
    assert info.value.code == "pending_approval_blocks_input"

    started = _runtime(ark.FileStateStorage(tmp_path), ["Done."])
    handle = started.start("something else")  # not loaded yet: the refusal comes from the task
    with pytest.raises(ArkError) as info:
        await handle
    assert info.value.code == "pending_approval_blocks_input" and started.current_run is None
    assert (await storage.load("s")).pending_approval is not None  # nothing was overwritten


async def test_a_decision_on_a_runtime_that_was_never_loaded_decides_the_saved_batch(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = _runtime(storage, [dangerous_turn()])
    await first.run("clear it")
    [item] = first.controller.list_pending_approvals()

    tools = Tools()
    runtime = _runtime(ark.FileStateStorage(tmp_path), ["Cleared."], tools=tools)
    decided = await runtime.controller.approve(item.approval_id)
    result = await runtime.current_run

    assert decided.ok and decided.all_decided and result.stop_reason == "completed"
    assert tools.ran == [("clear_cache", "/tmp/cache")]
    assert_history_paired((await storage.load("s")).history)


async def test_start_resume_on_a_runtime_that_was_never_loaded_resumes_the_saved_run(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = _runtime(storage, [ScriptedTurn(text="step 1", tool_calls=[call("c1", "add", a=1, b=2)]), "unused"])

    @first.hooks.after_tool_call
    def pause(ctx):
        first.request_suspend()

    assert (await first.run("go")).stop_reason == "suspended"

    runtime = _runtime(ark.FileStateStorage(tmp_path), ["resumed"])
    result = await runtime.start_resume()
    assert result.stop_reason == "completed" and result.text == "resumed"


async def test_fresh_discards_the_saved_state(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await _runtime(storage, [dangerous_turn()]).run("clear it")

    model = ScriptedModel(["A clean start."])
    runtime = ark.AgentRuntime(model, storage=storage, session_id="s", fresh=True)
    result = await runtime.run("hello")

    assert result.stop_reason == "completed"
    assert [m.text for m in model.requests[0].messages] == ["hello"]
    saved = await storage.load("s")
    assert saved.pending_approval is None and [m.text for m in saved.history] == ["hello", "A clean start."]


async def test_fresh_starts_over_from_an_unreadable_state(tmp_path):
    (tmp_path / "s.json").write_text('{"session_id": "s", "history": [', "utf-8")
    runtime = ark.AgentRuntime(ScriptedModel(["new"]), storage=ark.FileStateStorage(tmp_path), session_id="s",
                               fresh=True)
    assert (await runtime.run("hi")).stop_reason == "completed"
    assert json.loads((tmp_path / "s.json").read_text("utf-8"))["revision"] > 0


UNREADABLE = {
    "corrupt": lambda path: path.write_text('{"session_id": "s", "history": [', "utf-8"),
    "newer_version": lambda path: path.write_text(json.dumps({"schema_version": 99, "session_id": "s"}), "utf-8"),
    "wrong_types": lambda path: path.write_text(json.dumps({"session_id": "s", "is_running": "yes"}), "utf-8"),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
async def test_an_unreadable_saved_state_is_never_overwritten(tmp_path, kind):
    path = tmp_path / "s.json"
    UNREADABLE[kind](path)
    before = path.read_bytes()
    expected = "state_version_unsupported" if kind == "newer_version" else "state_corrupt"
    runtime = _runtime(ark.FileStateStorage(tmp_path), ["never"])

    with pytest.raises(ArkError) as info:
        await runtime.run("hi")
    assert info.value.code == expected and str(path) in info.value.message

    with pytest.raises(ArkError) as again:  # the next run fails the same way: it loads again
        await runtime.start("hi")
    assert again.value.code == expected
    decided = await runtime.controller.approve("approval_x")
    assert not decided.ok and decided.error.code == expected
    with pytest.raises(ArkError):
        await runtime.resume()
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


async def test_restore_and_a_new_runtime_see_the_same_session(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await _runtime(storage, ["one"]).run("first")
    restored = await ark.AgentRuntime.restore("s", storage=storage, model=ScriptedModel(["two"]))
    assert restored.loaded and [m.text for m in restored.history] == ["first", "one"]
    with pytest.raises(ArkError) as info:
        await ark.AgentRuntime.restore("s", storage=storage, model=ScriptedModel([]), fresh=True)
    assert info.value.code == "invalid_argument"


# -- one owner per session in a process ----------------------------------------------------------


async def test_a_second_runtime_on_the_same_session_detaches_the_first(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = _runtime(storage, [dangerous_turn(), "never"])
    first_log = EventLog(first)
    await first.run("clear it")
    [item] = first.controller.list_pending_approvals()

    second = _runtime(ark.FileStateStorage(tmp_path), ["Cleared."])  # the cell, run again

    [detached] = first_log.of(EventTypes.RUNTIME_DETACHED)
    assert detached.payload["reason"] == "replaced" and "'s'" in detached.payload["message"]
    assert first.detached == "replaced" and second.detached is None and "detached='replaced'" in repr(first)
    decided = await first.controller.approve(item.approval_id)
    assert not decided.ok and decided.error.code == "state_conflict" and decided.error.layer == "storage"
    assert "no longer owns session 's'" in decided.error.message
    for attempt in (lambda: first.run("more"), lambda: first.resume(), first.load):
        with pytest.raises(ArkError) as info:
            await attempt()
        assert info.value.code == "state_conflict"
    with pytest.raises(ArkError):
        first.start("more")
    assert first.cancel() is False  # a detached runtime cannot end the paused run either

    assert (await second.controller.approve(item.approval_id)).ok
    assert (await second.current_run).stop_reason == "completed"


async def test_the_same_memory_storage_is_one_place(tmp_path):
    storage = ark.MemoryStateStorage()
    first = _runtime(storage, ["a"])
    second = _runtime(storage, ["b"])
    assert first.detached == "replaced" and second.detached is None
    other = _runtime(ark.MemoryStateStorage(), ["c"])  # another store: another place
    again = _runtime(storage, ["d"], session_id="t")  # another session
    assert other.detached is None and again.detached is None and second.detached is None


async def test_restore_detaches_the_runtime_it_replaces(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = _runtime(storage, [dangerous_turn()])
    await first.run("clear it")
    restored = await ark.AgentRuntime.restore("s", storage=ark.FileStateStorage(tmp_path),
                                              model=ScriptedModel(["ok"]), tools=Tools().all)
    assert first.detached == "replaced" and restored.detached is None


async def test_a_replaced_runtime_is_freed_and_the_registry_does_not_grow(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    refs = []
    for n in range(20):  # a cell run twenty times
        runtime = _runtime(storage, [f"answer {n}"])
        await runtime.run(f"question {n}")
        refs.append(weakref.ref(runtime))
    del runtime
    gc.collect()
    assert sum(ref() is not None for ref in refs) == 0
    assert not any(key[1] == "s" for key in _session._owners)  # the entry went with its runtime

    last = _runtime(storage, ["final"])
    assert (await last.load()).revision == 60 and len(last.history) == 40  # three saves a run


async def test_replacing_a_runtime_during_a_run_cancels_it_and_the_new_one_continues_after_it(tmp_path):
    entered, gate = asyncio.Event(), asyncio.Event()

    @ark.tool
    async def fetch(url: str) -> str:
        """Fetch a page."""
        entered.set()
        await gate.wait()
        return "page"

    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "fetch", url="x")]), "never"]),
                             tools=[fetch], storage=storage, session_id="s")
    handle = first.start("fetch it")
    await entered.wait()

    model = ScriptedModel(["Fresh answer."])
    second = ark.AgentRuntime(model, tools=[fetch], storage=ark.FileStateStorage(tmp_path), session_id="s")
    result = await second.run("and now?")  # waits for the old run's terminal save, then loads it

    old = await handle
    assert old.stop_reason == "cancelled" and old.persisted
    assert result.stop_reason == "completed"
    sent = model.requests[0].messages
    assert [m.role for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2].is_error and "cancelled" in sent[2].text  # the old call is answered, not left open
    saved = await storage.load("s")
    assert saved.last_stop_reason == "completed" and saved.revision == second.state.revision
    assert_history_paired(saved.history)


# -- a runtime whose session someone else saved stops (across processes) -----------------------


@pytest.mark.parametrize("edit", ["another_runtime", "hand_edit"])
async def test_a_run_stops_at_its_first_save_that_finds_the_session_is_not_its_own(tmp_path, edit):
    """Another process saved the session since this runtime loaded it (or the file was
    edited into one a load refuses): the first autosave fails, and the run ends there,
    failed with that error, before the model is called or a tool runs; what the other
    wrote stays (issue 10: the run went on, ran its tools, and ended "completed")."""
    from .test_decisions_saved import Unshared   # two views of one folder: like two processes

    stale = _runtime(Unshared(ark.FileStateStorage(tmp_path)), ["never sent"])
    tools = Tools()
    stale_tools = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)]), "3"]),
                                   tools=tools.all, storage=Unshared(ark.FileStateStorage(tmp_path)), session_id="s")
    await _runtime(ark.FileStateStorage(tmp_path), ["first"]).run("hello")
    await stale.load()
    await stale_tools.load()
    if edit == "another_runtime":
        await _runtime(Unshared(ark.FileStateStorage(tmp_path)), ["second"]).run("meanwhile")
        code = "state_conflict"
    else:
        path = tmp_path / "s.json"
        path.write_text(path.read_text().replace('"is_running":false', '"is_running":"no"'))
        code = "state_corrupt"
    stored = (tmp_path / "s.json").read_bytes()

    for runtime in (stale, stale_tools):
        log = EventLog(runtime)
        result = await runtime.run("go on")
        assert result.stop_reason == "failed" and result.error.code == code and not result.persisted
        assert "the run stopped at its after_user_input save" in result.error.message
        assert runtime.model.requests == [] and EventTypes.LLM_BEFORE not in log.types()
    assert tools.ran == []
    assert (tmp_path / "s.json").read_bytes() == stored


# -- what a refusal says -----------------------------------------------------------------------


@pytest.mark.parametrize("kind, until", [("corrupt", "fix it"), ("newer", "by a newer arknb")])
async def test_an_unreadable_saved_state_names_the_file_and_the_way_forward(tmp_path, kind, until):
    await _runtime(ark.FileStateStorage(tmp_path), ["hi"]).run("hello")
    path = tmp_path / "s.json"
    document = json.loads(path.read_text())
    document.update({"is_running": "yes"} if kind == "corrupt" else {"schema_version": 99})
    path.write_text(json.dumps(document))
    runtime = _runtime(ark.FileStateStorage(tmp_path), ["never"])

    with pytest.raises(ArkError) as info:
        await runtime.run("again")
    decided = await runtime.controller.approve("approval_1")

    for message in (info.value.message, decided.error.message):
        assert str(path) in message and f"until it can be read ({until})" in message
        assert "AgentRuntime(..., fresh=True), which deletes it" in message


async def test_a_decision_refused_by_a_newer_save_does_not_claim_the_call_still_waits(tmp_path):
    from .test_decisions_saved import Unshared   # two views of one folder: like two processes

    tools = Tools()
    paused = _runtime(ark.FileStateStorage(tmp_path), [dangerous_turn()], tools=tools)
    await paused.run("clean up")
    [item] = paused.controller.list_pending_approvals()
    winner, loser = (_runtime(Unshared(ark.FileStateStorage(tmp_path)), ["done"], tools=tools) for _ in range(2))
    await winner.load()
    await loser.load()
    assert (await winner.controller.approve(item.approval_id)).ok
    await winner.current_run

    refused = await loser.controller.approve(item.approval_id)

    assert refused.error.code == "state_conflict"
    assert "was not recorded, and nothing runs here" in refused.error.message
    assert "still waits" not in refused.error.message and "a new AgentRuntime with this session_id" in refused.error.message
    assert tools.names() == ["clear_cache"]


class _LeaseTakenOver(ark.MemoryStateStorage):
    """A store whose saves fail as a durable store's do once another kernel took the lease."""

    taken = False

    async def save(self, state):
        if self.taken:
            raise ArkError("storage", "lease_lost", f"session {state.session_id!r}: this runtime's lease "
                           "(generation 1) was taken over; nothing was written")
        return await super().save(state)


async def test_a_decision_refused_because_another_took_the_lease_says_nothing_runs_here():
    tools = Tools()
    storage = _LeaseTakenOver()
    runtime = _runtime(storage, [dangerous_turn()], tools=tools)
    await runtime.run("clean up")
    [item] = runtime.controller.list_pending_approvals()
    storage.taken = True

    refused = await runtime.controller.approve(item.approval_id)

    assert refused.error.code == "lease_lost"
    assert "was not recorded, and nothing runs here" in refused.error.message
    assert "decide again" not in refused.error.message and tools.ran == []
