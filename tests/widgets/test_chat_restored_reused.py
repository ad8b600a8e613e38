"""A chat opened on a session a SIGKILL interrupted mid-batch tells the calls that
finished before the kill ("reused": their committed results stand, they never run again)
from the one in doubt (issue 25 item 2). The fact comes from the durable seam's operation
records through the in-doubt items' ``detail["reused_calls"]``; the fake front end shows
what a browser view would receive."""

from __future__ import annotations

from arknb.widgets import ChatWidget
from tests.durable.test_crash_recovery import counts, crash, finish, restore
from tests.widgets.chat_front import ChatFront


def _cards(entries):
    return {e["call_id"]: e for e in entries if e["kind"] == "tool"}


async def test_a_call_that_finished_before_the_kill_reads_reused_and_the_running_one_in_doubt(tmp_path):
    await crash(tmp_path, "sqlite", "one_done_one_running")
    store, _, runtime = await restore(tmp_path, "sqlite", ["Both finished."])
    [item] = runtime.controller.list_in_doubt()
    [pending] = runtime.state.pending_approval.items
    assert item.tool_call.id == "c2" and pending.detail["reused_calls"] == ["c1"]
    chat = ChatWidget(runtime, interval=0, call_later=lambda delay, callback: None)
    try:
        front = ChatFront(chat)
        cards = _cards(front.entries)
        assert (cards["c1"].get("origin"), cards["c1"]["status"]) == ("reused", "queued")
        assert (cards["c2"].get("origin"), cards["c2"]["status"]) == (None, "in_doubt")

        await runtime.controller.mark_done(item.operation_id, "slow 2 done (checked by hand)")
        assert (await finish(runtime)).stop_reason == "completed"
        done = _cards(chat._transcript.current_entries())
        assert (done["c1"]["origin"], done["c1"]["status"], done["c1"]["result"]) == ("reused", "done", "fast 1 done")
        assert done["c2"]["origin"] == "settled"
        assert counts(tmp_path) == {"fast": 1, "slow": 1}  # the reused call did not run again
    finally:
        chat.close()
        await runtime.aclose()
        await store.aclose()
