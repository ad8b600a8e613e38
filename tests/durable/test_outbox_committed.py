"""What a restore announces is committed when ``restore()`` returns (issue 26 item 5: a
listener hears an event only after the commit that holds it): the outbox read right after
the restore already holds its ``state.loaded``, and every event a listener heard is there."""

from __future__ import annotations

import arknb as ark


async def test_the_events_a_restore_announced_are_in_the_outbox_when_it_returns(tmp_path):
    store = ark.SQLiteStore(tmp_path / "arknb.sqlite3")
    first = ark.AgentRuntime(ark.ScriptedModel(["one"]), storage=store, session_id="r")
    await first.run("hello")
    await first.aclose()

    heard: list[str] = []
    runtime = ark.AgentRuntime(ark.ScriptedModel(["two"]), storage=store, session_id="r")
    runtime.bus.subscribe("*", lambda event: heard.append(event.event_id))
    await runtime.load()
    stored = await store.read_events("r")  # no wait: load() has returned
    assert stored[-1].type == "state.loaded"
    assert set(heard) <= {e.event_id for e in stored} and heard  # heard only what is committed
    await runtime.aclose()
    await store.aclose()
