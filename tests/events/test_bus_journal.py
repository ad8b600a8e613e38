"""The outbox journal of the EventBus (issue 26 item 5): an event the journal keeps
reaches listeners only after the journal reports it committed, with every later event
held behind it in order; what is never committed is delivered when the journal goes."""

from __future__ import annotations

import arknb as ark
from arknb.events import AgentEvent, EventBus


def _event(n: int, event_type: str = "tool.after") -> AgentEvent:
    return AgentEvent(f"r:{n}", event_type, "s", "r", n, 0.0, {"n": n})


def test_a_kept_event_is_delivered_only_after_its_commit_and_later_ones_wait_behind_it():
    bus = EventBus()
    kept: list[AgentEvent] = []

    def journal(event):
        kept.append(event)
        return True

    bus.add_journal(journal, ["tool.after"])
    heard: list[int] = []
    bus.subscribe("*", lambda e: heard.append(e.sequence))
    bus.publish(_event(1))
    bus.publish(_event(2, "llm.chunk"))   # not journaled, but published after a held one: waits
    bus.publish(_event(3))
    assert heard == [] and bus.held == 3
    bus.committed(kept[1:])               # the later commit first: nothing may overtake event 1
    assert heard == []
    bus.committed(kept[:1])
    assert heard == [1, 2, 3] and bus.held == 0
    bus.publish(_event(4, "llm.chunk"))   # nothing held: delivered at once
    assert heard == [1, 2, 3, 4]


def test_held_events_go_to_the_listeners_of_the_moment_they_were_published():
    bus = EventBus()
    bus.add_journal(lambda e: True, ["tool.after"])
    early: list[int] = []
    bus.subscribe("*", lambda e: early.append(e.sequence))
    bus.publish(_event(1))
    late: list[int] = []
    bus.subscribe("*", lambda e: late.append(e.sequence))
    bus.release_all()
    assert early == [1] and late == []


def test_removing_the_journal_or_releasing_delivers_what_it_held():
    bus = EventBus()
    remove = bus.add_journal(lambda e: True, ["tool.after"])
    heard: list[int] = []
    bus.subscribe("*", lambda e: heard.append(e.sequence))
    bus.publish(_event(1))
    assert heard == [] and bus.has_listeners("tool.after")
    remove()
    assert heard == [1]
    bus.publish(_event(2))
    assert heard == [1, 2]


def test_a_journal_that_raises_is_counted_and_the_event_still_delivered():
    bus = EventBus()

    def broken(event):
        raise RuntimeError("boom")

    bus.add_journal(broken, ["tool.after"])
    heard: list[int] = []
    bus.subscribe("*", lambda e: heard.append(e.sequence))
    bus.publish(_event(1))
    assert heard == [1] and bus.listener_errors == 1


def test_a_journal_must_be_callable():
    bus = EventBus()
    try:
        bus.add_journal("outbox", ["tool.after"])
    except ark.ArkError as err:
        assert err.code == "invalid_argument" and "journal must be callable" in err.message
    else:
        raise AssertionError("a str was accepted as a journal")


async def test_on_a_durable_store_a_listener_hears_an_event_only_once_it_is_in_the_outbox(tmp_path):
    import json
    import sqlite3

    path = tmp_path / "s.db"
    store = ark.SQLiteStore(path)

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ark.ScriptedModel([ark.ScriptedTurn(text=["a", "b"], tool_calls=[ark.ToolCall(
        id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]), "3"])
    runtime = ark.AgentRuntime(model, tools=[add], storage=store, session_id="s1")
    checked: list[tuple[str, bool]] = []

    def listener(event):  # reads the database file itself, at the moment it hears the event
        if event.type == ark.EventTypes.LLM_CHUNK:
            return
        with sqlite3.connect(path) as conn:
            bodies = [json.loads(b)["event_id"] for (b,) in conn.execute("SELECT body FROM outbox")]
        checked.append((event.type, event.event_id in bodies))

    runtime.bus.subscribe("*", listener)
    assert (await runtime.run("hello")).stop_reason == "completed"
    assert len(checked) > 8 and [c for c in checked if not c[1]] == []
    await runtime.aclose()
    await store.aclose()


async def test_run_stream_on_a_durable_store_yields_what_after_run_hooks_announce(tmp_path):
    # An after_run hook's diagnostic is announced after the run's last commit: it is
    # committed before the run's task ends, so run_stream (which stops with the task) has it.
    store = ark.SQLiteStore(tmp_path / "s.db")
    runtime = ark.AgentRuntime(ark.ScriptedModel(["hi"]), storage=store, session_id="s1")

    @runtime.hooks.after_run
    def broken(ctx):
        raise RuntimeError("observer failed")

    seen = [event.type async for event in runtime.run_stream("hello")]
    assert seen[-1] == ark.EventTypes.HOOK_DIAGNOSTIC and ark.EventTypes.AGENT_SUCCESS in seen
    outbox = [e.type for e in await store.read_events("s1")]
    assert outbox[-1] == ark.EventTypes.HOOK_DIAGNOSTIC
    await runtime.aclose()
    await store.aclose()
