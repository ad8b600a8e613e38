"""Child of the random-SIGKILL trials (tests/durable/test_random_kills.py,
benchmarks/random_kills.py): an approval batch of slow dangerous tools.

The agent asks for three dangerous calls; the child approves them one by one (each
approval saved before it is acknowledged), printing ``APPROVED <n>`` after the n-th, and
the run goes on to execute them, each taking a random while. Every tool appends ``start <call_id>`` when it begins
and ``end <call_id>`` when its work is done to ``<dir>/effects.log`` (fsynced), so the
parent knows which calls began and which finished, whatever moment it kills the child.
A listener of the runtime's bus appends ``<event_id> <type>`` to ``<dir>/announced.log``
for every event it receives (written through to the operating system, which keeps it
when the process is killed): every one of them must be in the outbox after the kill.

With a fourth argument ``k``, the listener kills its own process (SIGKILL) as it receives
the k-th event, right after writing its line: the harshest moment for the outbox.

Usage: python _approval_kill_child.py <sqlite|postgres> <dir> <seed> [k]
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
from pathlib import Path

import arknb as ark

CALLS = ("c1", "c2", "c3")


def open_store(kind: str, directory: str | Path):
    if kind == "postgres":
        return ark.PostgresStore((Path(directory) / "dsn").read_text())
    return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")


def note(directory: str | Path, line: str) -> None:
    with open(Path(directory) / "effects.log", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def make_tools(directory: str | Path, delays: dict[str, float] | None = None):
    @ark.tool(risk="dangerous")
    async def send_mail(to: str, ctx: ark.ToolContext) -> str:
        """Send a mail (slow, not idempotent)."""
        note(directory, f"start {ctx.call_id}")
        await asyncio.sleep((delays or {}).get(ctx.call_id, 0.0))
        note(directory, f"end {ctx.call_id}")
        return f"sent to {to}"

    return [send_mail]


def listen(runtime, directory: str | Path, kill_on_event: int | None = None) -> None:
    """Record every event a listener of this process receives (see the module docstring)."""
    log = open(Path(directory) / "announced.log", "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - lives until the kill
    count = [0]

    def heard(event) -> None:
        log.write(f"{event.event_id} {event.type}\n")
        count[0] += 1
        if count[0] == kill_on_event:
            os.kill(os.getpid(), signal.SIGKILL)

    runtime.bus.subscribe("*", heard)


def script() -> list:
    calls = [ark.ToolCall(id=call_id, name="send_mail", arguments_json=json.dumps({"to": f"{call_id}@example.org"}),
                          index=i) for i, call_id in enumerate(CALLS)]
    return [ark.ScriptedTurn(text="Sending three mails.", tool_calls=calls), ark.ScriptedTurn(text="All sent.")]


async def main(kind: str, directory: str, seed: int, kill_on_event: int | None = None) -> None:
    rng = random.Random(seed)
    delays = {call_id: rng.uniform(0.0, 0.4) for call_id in CALLS}
    store = open_store(kind, directory)
    runtime = ark.AgentRuntime(ark.ScriptedModel(script()), tools=make_tools(directory, delays), storage=store,
                               session_id="s1")
    listen(runtime, directory, kill_on_event)
    result = await runtime.run("Mail the three of them")
    assert result.stop_reason == "awaiting_approval", result
    for number, item in enumerate(runtime.controller.list_pending_approvals(), start=1):
        decided = await runtime.controller.approve(item.approval_id)
        assert decided.ok, decided
        print(f"APPROVED {number} {item.tool_call.id}", flush=True)
    if runtime.current_run is not None:
        await runtime.current_run.wait()
    print("DONE", flush=True)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else None))
