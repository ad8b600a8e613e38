"""The extension seam on its own (DESIGN §14): a tiny user-written extension.

Tools (offered, executable, depending on state), a system-prompt section, hooks that
run after the user's and before the approval policy, a state slice saved and restored,
``on_restore``, name clashes, and an approval kind of its own.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import arknb as ark
from arknb import (
    AgentHook, ArkError, EventTypes, ModelCallHookResult, ScriptedModel, ScriptedTurn, ToolCallHookResult,
    ToolResult,
)
from arknb.runtime.extensions import ApprovalKind, Extension, ExtensionScope

from ._approval_kit import EventLog, FaultyStorage, Tools, call


class Counter(Extension):
    """Offers ``bump`` (adds to a counter in its slice) and, once the counter is 2 or more,
    ``report``; its prompt section shows the counter."""

    name = "counter"

    def __init__(self) -> None:
        self.scope: ExtensionScope | None = None
        self.restored: list[ark.AgentState] = []
        scope_of = self

        @ark.tool
        async def bump(by: int = 1) -> str:
            """Add to the counter."""
            value = scope_of.value() + by
            scope_of.scope.set_slice({"value": value})
            scope_of.scope.emit("counter.bumped", {"value": value})
            return f"counter is {value}"

        @ark.tool(read_only=True)
        def report() -> str:
            """Say the counter."""
            return "reported"

        self.bump, self.report = bump, report

    def value(self) -> int:
        return (self.scope.slice or {}).get("value", 0)

    def setup(self, scope: ExtensionScope) -> None:
        self.scope = scope

    def tools(self, state):
        value = (state.extensions.get("counter") or {}).get("value", 0)
        return (self.bump, self.report) if value >= 2 else (self.bump,)

    def instructions(self, state):
        return f"The counter is {(state.extensions.get('counter') or {}).get('value', 0)}."

    def on_restore(self, state):
        self.restored.append(state)


def _tool_names(request) -> list[str]:
    return [t.name for t in request.tools]


async def test_extension_tools_are_offered_run_and_follow_the_state():
    ext = Counter()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=2)]), "Done."])
    runtime = ark.AgentRuntime(model, tools=Tools().all, extensions=[ext])
    log = EventLog(runtime)

    result = await runtime.run("bump it")

    assert result.stop_reason == "completed"
    first, second = model.requests
    assert _tool_names(first) == ["add", "clear_cache", "drop_table", "bump"]
    # The tool's state change shows from the next model call on.
    assert _tool_names(second) == ["add", "clear_cache", "drop_table", "bump", "report"]
    assert runtime.state.extensions["counter"] == {"value": 2}
    assert runtime.history[2].text == "counter is 2"
    assert [e.payload["value"] for e in log.of("counter.bumped")] == [2]
    assert runtime.extensions == (ext,)


async def test_instructions_join_the_system_prompt_for_each_call():
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=5)]), "Done."])
    runtime = ark.AgentRuntime(model, system_prompt="Be brief.", extensions=[Counter()])

    await runtime.run("go")

    first, second = (r.messages[0] for r in model.requests)
    assert first.role == "system" and first.text == "Be brief.\n\nThe counter is 0."
    assert second.text == "Be brief.\n\nThe counter is 5."
    # History never holds the system prompt: only the request does.
    assert all(m.role != "system" for m in runtime.history)


async def test_instructions_without_a_system_prompt():
    model = ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model, extensions=[Counter()])
    await runtime.run("go")
    assert model.requests[0].messages[0].text == "The counter is 0."


class Recorder(AgentHook):
    def __init__(self, name: str, order: list[str], deny: str | None = None) -> None:
        self.name = name
        self.order = order
        self.deny = deny

    async def before_tool_call(self, ctx):
        self.order.append(self.name)
        if self.deny and ctx.call.name == self.deny:
            return ToolCallHookResult.deny(ToolResult.from_text("refused by extension", is_error=True), "ext says no")
        return ToolCallHookResult.proceed(ctx.call)


class Hooked(Extension):
    def __init__(self, name: str, hook: AgentHook) -> None:
        self.name = name
        self._hook = hook

    def hooks(self):
        return (self._hook,)


async def test_extension_hooks_run_after_user_hooks_in_extension_order_before_the_approval_policy():
    order: list[str] = []
    tools = Tools()
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "clear_cache", path="/x")]), "Done."])
    runtime = ark.AgentRuntime(model, tools=tools.all, extensions=[
        Hooked("first", Recorder("first_hook", order)),
        Hooked("second", Recorder("second_hook", order, deny="clear_cache"))])
    log = EventLog(runtime)

    @runtime.hooks.before_tool_call
    def user_hook(ctx):
        order.append("user_hook")

    result = await runtime.run("clear it")

    assert order == ["user_hook", "first_hook", "second_hook"]
    # The extension denied the dangerous call before the approval policy could defer it.
    assert result.stop_reason == "completed" and runtime.state.pending_approval is None
    assert not log.of(EventTypes.APPROVAL_REQUIRED) and tools.ran == []
    [decision] = [e for e in log.of(EventTypes.HOOK_DECISION) if e.payload["slot"] == "before_tool_call"]
    assert decision.payload["hook"] == "second_hook" and decision.payload["action"] == "deny"
    [denied] = log.of(EventTypes.TOOL_DENIED)
    assert denied.payload["hook"] == "second_hook"


async def test_clearing_user_hooks_keeps_extension_hooks():
    order: list[str] = []
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)]), "ok"]),
                               tools=Tools().all, extensions=[Hooked("x", Recorder("ext_hook", order))])

    @runtime.hooks.before_tool_call
    def user_hook(ctx):
        order.append("user_hook")

    runtime.hooks.clear()
    await runtime.run("go")

    assert order == ["ext_hook"]
    assert list(runtime.hooks) == []  # the user's registry lists only the user's hooks


class Boom(AgentHook):
    name = "boom"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def before_tool_call(self, ctx):
        raise self.error

    async def after_run(self, ctx):
        raise RuntimeError("observer failed")


async def test_an_extension_hook_that_raises_fails_the_run_instead_of_failing_open():
    tools = Tools()
    error = ArkError("config", "invalid_argument", "the gate is misconfigured")
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)])]),
                               tools=tools.all, extensions=[Hooked("gate", Boom(error))])
    log = EventLog(runtime)

    result = await runtime.run("go")

    assert result.stop_reason == "failed" and result.error.code == "invalid_argument"
    assert "misconfigured" in result.error.message
    assert tools.ran == []  # nothing ran past the broken gate
    # The observer slot stays isolated: its failure is a diagnostic, not a second error.
    assert [d.payload["slot"] for d in log.of(EventTypes.HOOK_DIAGNOSTIC)] == ["after_run"]


async def test_a_plain_exception_in_an_extension_hook_names_the_hook():
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "add", a=1, b=2)])]),
                               tools=Tools().all, extensions=[Hooked("gate", Boom(ValueError("bad")))])
    result = await runtime.run("go")
    assert result.error.code == "internal_error"
    assert "extension hook 'boom' failed in before_tool_call" in result.error.message and "bad" in result.error.message


class Rewriter(AgentHook):
    """Replaces every message but the last in the request (history keeps them all)."""

    name = "rewriter"

    async def before_model_call(self, ctx):
        messages = ctx.request.messages
        if len(messages) <= 2:
            return None
        summary = ark.AgentMessage.user(f"[{len(messages) - 1} earlier messages summarised]")
        return ModelCallHookResult.proceed(ctx.request.model_copy(update={"messages": (summary, messages[-1])}))


async def test_a_before_model_call_extension_hook_rewrites_the_request_only():
    model = ScriptedModel(["one", "two"])
    runtime = ark.AgentRuntime(model, extensions=[Hooked("compress", Rewriter())])
    await runtime.run("first")
    await runtime.run("second")

    assert [m.text for m in model.requests[1].messages] == ["[2 earlier messages summarised]", "second"]
    assert [m.text for m in runtime.history] == ["first", "one", "second", "two"]


async def test_slice_is_saved_and_restored_and_on_restore_is_called(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=3)]), "ok"]),
                             storage=storage, session_id="s", extensions=[Counter()])
    await first.run("go")
    on_disk = json.loads((tmp_path / "s.json").read_text())
    assert on_disk["extensions"] == {"counter": {"value": 3}}

    ext = Counter()
    model = ScriptedModel(["again"])
    restored = await ark.AgentRuntime.restore("s", storage=storage, model=model, extensions=[ext])

    assert [s.extensions for s in ext.restored] == [{"counter": {"value": 3}}]
    assert ext.scope.slice == {"value": 3}
    await restored.run("more")
    assert ext.restored and len(ext.restored) == 1  # told once, not per run
    assert "report" in _tool_names(model.requests[0])  # tools follow the restored slice


class AsyncRestore(Extension):
    name = "async_restore"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_restore(self, state):
        await asyncio.sleep(0)
        self.seen.append(state.session_id)


async def test_async_on_restore_is_awaited_before_the_first_run(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await ark.AgentRuntime(ScriptedModel(["a"]), storage=storage, session_id="s").run("hi")
    saved = await storage.load("s")

    ext = AsyncRestore()
    runtime = ark.AgentRuntime(ScriptedModel(["b"]), storage=storage, state=saved, extensions=[ext])
    assert ext.seen == []  # the constructor cannot await; the first run does
    await runtime.run("again")
    assert ext.seen == ["s"]


def test_a_tool_name_clash_with_a_user_tool_is_a_config_error():
    @ark.tool
    def bump(by: int = 1) -> str:
        """The user's own bump."""
        return "mine"

    with pytest.raises(ArkError) as info:
        ark.AgentRuntime(ScriptedModel([]), tools=[bump], extensions=[Counter()])
    assert info.value.layer == "config" and info.value.code == "invalid_argument"
    assert "extension 'counter' offers a tool named 'bump'" in info.value.message


async def test_a_clash_that_appears_later_fails_the_run_naming_both_owners():
    @ark.tool
    def report() -> str:
        """The user's own report."""
        return "mine"

    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=2)]), "never"])
    runtime = ark.AgentRuntime(model, tools=[report], extensions=[Counter()])
    result = await runtime.run("go")
    assert result.stop_reason == "failed" and result.error.code == "invalid_argument"
    assert "'report'" in result.error.message and "tools=" in result.error.message


def test_extension_names_are_unique_and_extensions_are_instances():
    with pytest.raises(ArkError, match="two extensions are named 'counter'"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[Counter(), Counter()])
    with pytest.raises(ArkError, match="call it first"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[Counter])
    with pytest.raises(ArkError, match="Extension instances"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[object()])
    with pytest.raises(ArkError, match="needs a name"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[Extension()])


def test_set_slice_refuses_values_that_are_not_json():
    ext = Counter()
    runtime = ark.AgentRuntime(ScriptedModel([]), extensions=[ext])
    with pytest.raises(ArkError, match="JSON-ready"):
        ext.scope.set_slice({"when": object()})
    with pytest.raises(ArkError, match="JSON-ready"):
        ext.scope.set_slice({"x": float("nan")})
    value = {"a": [1, 2]}
    ext.scope.set_slice(value)
    value["a"].append(3)  # the state holds its own copy
    assert ext.scope.slice == {"a": [1, 2]}
    ext.scope.set_slice(None)
    assert "counter" not in ext.scope.state.extensions and ext.scope.state is runtime.state


async def test_a_finished_runtime_with_extensions_is_freed_by_reference_counting(tmp_path):
    # Scopes reach their runtime weakly, so plan mode, skills and a user extension add no cycle.
    import gc
    import weakref

    ext = Counter()
    skill = ark.Skill("haiku", "Answer as a haiku.", "Write a haiku.")
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=2), call("t1", "write_todos", 1,
                                                                              todos=[{"content": "x"}])]),
                           ScriptedTurn(tool_calls=[ark.ToolCall(id="a1", name="activate_skill",
                                                               arguments_json='{"name": "haiku"}')]), "Done."])
    gc.collect()
    gc.disable()
    try:
        runtime = ark.AgentRuntime(model, storage=ark.FileStateStorage(tmp_path), session_id="freed",
                                   plan_mode="auto", skills=[skill], extensions=[ext])
        assert (await runtime.run("go")).stop_reason == "completed"
        assert runtime.state.plan.version == 1 and runtime.state.active_skills == ("haiku",)
        ref = weakref.ref(runtime)
        del runtime
        assert ref() is None, "a finished runtime with extensions is still alive: something refers back to it"
    finally:
        gc.enable()
    with pytest.raises(ArkError, match="its runtime no longer exists"):
        ext.scope.set_slice({"value": 1})


async def test_scope_persist_goes_through_the_persistence_hooks():
    storage = FaultyStorage()
    ext = Counter()
    runtime = ark.AgentRuntime(ScriptedModel([]), storage=storage, session_id="p", extensions=[ext])
    reasons: list[tuple[str, bool]] = []

    @runtime.hooks.before_persist_state
    def skip_all(ctx):
        reasons.append((ctx.reason, ctx.mandatory))
        return ark.StatePersistenceHookResult.skip("quiet")

    ext.scope.set_slice({"value": 9})
    skipped = await ext.scope.persist("counter_checkpoint")
    saved = await ext.scope.persist("counter_checkpoint", mandatory=True)

    assert skipped.ok and skipped.skipped and not saved.skipped and saved.ok
    assert reasons == [("counter_checkpoint", False), ("counter_checkpoint", True)]
    assert (await storage.load("p")).extensions == {"counter": {"value": 9}}


class Vote(ApprovalKind):
    """Items of kind "vote": announced with their own event, answered with a custom result on denial."""

    name = "vote"

    def __init__(self, scope_of: Extension) -> None:
        self.ext = scope_of
        self.decided: list[str] = []

    def announce(self, batch, items):
        self.ext.scope.emit("vote.required", {"batch_id": batch.batch_id,
                                              "questions": [i.detail["question"] for i in items]})

    async def on_decided(self, batch, item):
        self.decided.append(item.decision.value)

    def answer(self, item):
        if item.decision == "approved":
            return None
        return ToolResult.from_text(f"the vote said no: {item.deny_reason}", is_error=True, error_code="tool_denied")

    def blocks_input_error(self, batch):
        return ArkError("security", "vote_pending", "a vote is open")


class Voting(Extension):
    """Defers every ``drop_table`` call to a vote."""

    name = "voting"

    def __init__(self) -> None:
        self.kind = Vote(self)

        class Gate(AgentHook):
            name = "vote_gate"

            async def before_tool_call(self, ctx):
                if ctx.call.name == "drop_table":
                    return ToolCallHookResult.defer("needs a vote", kind="vote",
                                                    detail={"question": f"drop {ctx.call.arguments['table']}?"})
                return None

        self._gate = Gate()

    def setup(self, scope):
        self.scope = scope

    def hooks(self):
        return (self._gate,)

    def approval_kinds(self):
        return (self.kind,)


async def test_an_approval_kind_of_its_own_is_saved_before_it_is_announced():
    storage = FaultyStorage()
    ext = Voting()
    tools = Tools()
    turn = ScriptedTurn(tool_calls=[call("c1", "drop_table", table="users"), call("c2", "add", 1, a=1, b=1)])
    model = ScriptedModel([turn, "Kept it."])
    runtime = ark.AgentRuntime(model, tools=tools.all, storage=storage, session_id="v", extensions=[ext])
    EventLog(runtime, storage.log)  # events go into the storage's log, beside its saves

    result = await runtime.run("drop users")

    assert result.stop_reason == "awaiting_approval"
    batch = runtime.state.pending_approval
    assert batch.kind == "vote" and [i.kind for i in batch.items] == ["vote"]
    assert batch.items[0].detail == {"question": "drop users?"}
    # Saved (mandatory) first, then approval.required, then the kind's own event, then suspended.
    order = [entry[0] if entry[0] == "save" else entry[1] for entry in storage.log]
    last_save = max(i for i, e in enumerate(order) if e == "save")
    assert order[last_save + 1:last_save + 5] == [EventTypes.STATE_PERSISTED, EventTypes.APPROVAL_REQUIRED,
                                                  "vote.required", EventTypes.AGENT_SUSPENDED]
    assert (await storage.load("v")).pending_approval.items[0].kind == "vote"
    with pytest.raises(ArkError) as info:
        runtime.start("something else")
    assert info.value.code == "vote_pending"

    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.deny(item.approval_id, "users are precious")
    done = await runtime.current_run

    assert done.stop_reason == "completed" and ext.kind.decided == ["denied"]
    assert tools.ran == [("add", (1, 1))]
    answer = model.requests[1].messages[-2]
    assert answer.tool_call_id == "c1" and answer.text == "the vote said no: users are precious"


async def test_a_batch_of_a_kind_this_runtime_lacks_resolves_as_a_tool_approval(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    turn = ScriptedTurn(tool_calls=[call("c1", "drop_table", table="t")])
    await ark.AgentRuntime(ScriptedModel([turn]), tools=Tools().all, storage=storage, session_id="k",
                           extensions=[Voting()]).run("go")

    tools = Tools()
    runtime = await ark.AgentRuntime.restore("k", storage=storage, model=ScriptedModel(["done"]), tools=tools.all)
    with pytest.raises(ArkError) as info:
        runtime.start("more")
    assert info.value.code == "pending_approval_blocks_input"  # never wedged on an unknown kind
    [item] = runtime.controller.list_pending_approvals()
    await runtime.controller.approve(item.approval_id)
    assert (await runtime.current_run).stop_reason == "completed"
    assert tools.ran == [("drop_table", "t")]


def test_two_kinds_with_one_name_are_refused():
    class Twice(Extension):
        name = "twice"

        def approval_kinds(self):
            return (Vote(self), Vote(self))

    with pytest.raises(ArkError, match="approval kind named 'vote' is already installed"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[Twice()])

    class Shadow(Extension):
        name = "shadow"

        def approval_kinds(self):
            kind = ApprovalKind()
            kind.name = "tool"
            return (kind,)

    with pytest.raises(ArkError, match="'tool' is already installed"):
        ark.AgentRuntime(ScriptedModel([]), extensions=[Shadow()])


async def test_an_extension_that_fails_in_tools_fails_the_run_naming_it():
    class Broken(Extension):
        name = "broken"

        def __init__(self) -> None:
            self.calls = 0

        def tools(self, state):
            self.calls += 1
            if self.calls > 1:  # construction checks tools once; the first run then trips
                raise KeyError("missing")
            return ()

    result = await ark.AgentRuntime(ScriptedModel(["x"]), extensions=[Broken()]).run("go")
    assert result.stop_reason == "failed"
    assert "extension 'broken' failed in tools(): KeyError" in result.error.message


async def test_runtimes_without_extensions_build_requests_as_before():
    model = ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model, tools=Tools().all, system_prompt="S")
    await runtime.run("go")
    assert runtime._offered_tools() is runtime.tools  # no merged registry, no extra cost
    assert [m.text for m in model.requests[0].messages] == ["S", "go"]


async def test_a_runtime_that_loads_a_saved_session_tells_its_extensions_once(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=2)]), "ok"]),
                             storage=storage, session_id="s", extensions=[Counter()])
    await first.run("go")

    ext = Counter()
    model = ScriptedModel(["one", "two"])
    runtime = ark.AgentRuntime(model, storage=storage, session_id="s", extensions=[ext])  # loads before acting
    assert ext.restored == []
    await runtime.run("again")
    await runtime.run("and again")

    assert [s.extensions for s in ext.restored] == [{"counter": {"value": 2}}]
    assert "The counter is 2." in model.requests[0].messages[0].text


class Refusing(Extension):
    name = "refusing"

    def __init__(self) -> None:
        self.calls = 0

    def on_restore(self, state):
        self.calls += 1
        if self.calls == 1:
            raise ArkError("storage", "state_corrupt", "the refusing slice is not readable")


async def test_an_extension_that_refuses_the_saved_session_fails_the_load_and_it_is_tried_again(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await ark.AgentRuntime(ScriptedModel(["a"]), storage=storage, session_id="s").run("hi")

    ext = Refusing()
    runtime = ark.AgentRuntime(ScriptedModel(["b"]), storage=storage, session_id="s", extensions=[ext])
    with pytest.raises(ArkError) as info:  # a load error is raised, like the storage's own
        await runtime.run("again")
    assert info.value.code == "state_corrupt" and "refusing slice" in info.value.message
    assert (await storage.load("s")).history[-1].text == "a"  # nothing was saved over the session
    ok = await runtime.run("again")
    assert ok.stop_reason == "completed" and ext.calls == 2


class Waiter(Extension):
    """An async built-in tool that waits on the run's cancellation token (as delegate_task would)."""

    name = "waiter"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False
        ext = self

        @ark.tool
        async def wait_for_child(ctx: ark.ToolContext) -> str:
            """Wait until the run is cancelled."""
            ext.started.set()
            try:
                await ctx.cancel.wait()
            finally:
                ext.cancelled = ctx.cancel.cancelled
            return "never"

        self._tool = wait_for_child

    def tools(self, state):
        return (self._tool,)


async def test_an_async_extension_tool_gets_the_runs_cancellation_token():
    ext = Waiter()
    runtime = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[call("w1", "wait_for_child")])]),
                               extensions=[ext])
    handle = runtime.start("go")
    await ext.started.wait()
    runtime.cancel()
    result = await handle
    assert result.stop_reason == "cancelled" and ext.cancelled


async def test_an_extension_added_after_construction_is_set_up_offered_and_saved(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    model = ScriptedModel([ScriptedTurn(tool_calls=[call("c1", "bump", by=3)]), "done"])
    runtime = ark.AgentRuntime(model, storage=storage, session_id="s")
    counter = Counter()
    runtime.add_extension(counter)
    assert counter.scope is not None and runtime.extensions[-1] is counter
    await runtime.run("go")
    assert _tool_names(model.requests[0]) == ["bump"]  # offered from the first call
    assert (await storage.load("s")).extensions["counter"] == {"value": 3}  # its slice is saved
    restored = ark.AgentRuntime(ScriptedModel(["x"]), storage=storage, session_id="s")
    again = Counter()
    restored.add_extension(again)  # added before the session is adopted: told of the restore
    await restored.run("more")
    assert again.value() == 3 and len(again.restored) == 1


async def test_add_extension_refuses_a_taken_name_and_a_running_runtime():
    model = ScriptedModel([ScriptedTurn(text=["a", "b"])])
    runtime = ark.AgentRuntime(model, extensions=[Counter()])
    with pytest.raises(ArkError) as taken:
        runtime.add_extension(Counter())
    assert taken.value.code == "invalid_argument" and "'counter'" in str(taken.value)
    with pytest.raises(ArkError) as not_one:
        runtime.add_extension(Counter)
    assert "call it first" in str(not_one.value)
    handle = runtime.start("go")
    with pytest.raises(ArkError) as running:
        class Other(Extension):
            name = "other"
        runtime.add_extension(Other())
    assert running.value.code == "run_already_active"
    await handle
    assert [e.name for e in runtime.extensions] == ["counter"]


async def test_add_extension_installs_a_kind_before_the_runtime_runs_and_refuses_a_taken_name() -> None:
    class Kind(ApprovalKind):
        name = "late_kind"

    class Late(Extension):
        name = "late"

        def approval_kinds(self):
            return (Kind(),)

    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]))
    runtime.add_extension(Late())
    assert [e.name for e in runtime.extensions][-1] == "late"
    with pytest.raises(ark.ArkError, match="two extensions are named 'late'"):
        runtime.add_extension(Late())
    await runtime.run("hello")
