"""Shared pieces for the approval, persistence, restore, loop and suspend tests.

Tools that record what ran, an event recorder, a storage that fails on chosen saves
and records its calls in the same log as the events (so a test can assert the order
of saves and events), and a check that history keeps every tool call paired.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

import arknb as ark
from arknb import AgentEvent, AgentMessage, ScriptedModel, ScriptedTurn, ToolCall
from arknb.state import AgentState, MemoryStateStorage

__all__ = ["EventLog", "FaultyStorage", "Tools", "assert_history_paired", "call", "dangerous_turn", "finish_background",
           "kill_when_awaiting", "make_runtime", "run_until_line"]


def call(call_id: str, name: str, index: int = 0, **arguments: Any) -> ToolCall:
    """A tool call with ``arguments`` as its JSON."""
    import json
    return ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=index)


class Tools:
    """``add`` (safe), ``clear_cache`` and ``drop_table`` (dangerous); ``ran`` lists the calls executed."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []
        ran = self.ran

        @ark.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            ran.append(("add", (a, b)))
            return a + b

        @ark.tool(risk="dangerous")
        def clear_cache(path: str) -> str:
            """Delete a cache folder."""
            ran.append(("clear_cache", path))
            return f"cleared {path}"

        @ark.tool(risk="dangerous")
        def drop_table(table: str) -> str:
            """Drop a table."""
            ran.append(("drop_table", table))
            return f"dropped {table}"

        self.all = [add, clear_cache, drop_table]

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


def dangerous_turn(*extra: ToolCall, text: str = "On it.") -> ScriptedTurn:
    """A model turn calling ``clear_cache`` (index 0) plus ``extra`` calls."""
    return ScriptedTurn(text=text, tool_calls=[call("c1", "clear_cache", path="/tmp/cache"), *extra])


class EventLog:
    """Records every published event (subscribed to ``*``)."""

    def __init__(self, runtime: ark.AgentRuntime, log: list | None = None) -> None:
        self.events: list[AgentEvent] = []
        self._log = log
        runtime.bus.subscribe(ark.EventTypes.ANY, self._on)

    def _on(self, event: AgentEvent) -> None:
        self.events.append(event)
        if self._log is not None:
            self._log.append(("event", event.type, dict(event.payload)))

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, event_type: str) -> list[AgentEvent]:
        return [e for e in self.events if e.type == event_type]

    def persisted(self) -> list[dict]:
        return [dict(e.payload) for e in self.of(ark.EventTypes.STATE_PERSISTED)]


class FaultyStorage(MemoryStateStorage):
    """A memory storage whose save raises on the chosen call numbers (1-based) or when
    ``fail_if(state)`` is true; every call is recorded in ``log``."""

    def __init__(self, fail_on: Iterable[int] = (), fail_if: Callable[[AgentState], bool] | None = None,
                 log: list | None = None) -> None:
        super().__init__()
        self.fail_on = set(fail_on)
        self.fail_if = fail_if
        self.log: list = log if log is not None else []
        self.saves = 0
        self.saved: list[AgentState] = []
        self.marked: list[str] = []

    async def save(self, state: AgentState) -> int:
        self.saves += 1
        failing = self.saves in self.fail_on or (self.fail_if is not None and self.fail_if(state))
        self.log.append(("save", self.saves, "failed" if failing else "ok"))
        if failing:
            raise OSError(f"disk full (injected on save #{self.saves})")
        self.saved.append(state)
        return await super().save(state)

    async def mark_not_resumable(self, session_id: str) -> None:
        self.marked.append(session_id)
        self.log.append(("mark_not_resumable", session_id))
        await super().mark_not_resumable(session_id)


def make_runtime(turns: list, tools: Tools | None = None, **options: Any) -> tuple[ark.AgentRuntime, Tools, EventLog]:
    """A runtime over a ScriptedModel, with recorded tools and events."""
    tools = tools or Tools()
    runtime = ark.AgentRuntime(ScriptedModel(turns), tools=tools.all, **options)
    return runtime, tools, EventLog(runtime, getattr(options.get("storage"), "log", None))


def assert_history_paired(history: Iterable[AgentMessage]) -> None:
    """Every assistant tool call is answered, right after its message, by exactly one tool message."""
    history = list(history)
    for i, message in enumerate(history):
        if message.role == "assistant" and message.tool_calls:
            expected = [c.id for c in message.tool_calls]
            answers = []
            for follower in history[i + 1:]:
                if follower.role != "tool":
                    break
                answers.append(follower.tool_call_id)
            assert sorted(answers) == sorted(expected), f"history[{i}] calls {expected} answered by {answers}"
        if message.role == "tool":
            assert i > 0 and (history[i - 1].role == "tool" or history[i - 1].tool_calls), f"orphan tool message {i}"


async def finish_background(runtime: ark.AgentRuntime) -> ark.AgentRunResult:
    """Await the run that a last decision started in the background."""
    handle = runtime.current_run
    assert handle is not None, "no background run was started"
    return await asyncio.wait_for(handle.wait(), 5)


def run_until_line(script, *args: str, prefix: str) -> str:
    """Start ``python script args...``, read its first line, SIGKILL it; return the line.

    The child prints the line once what the test needs is saved, then blocks; the
    assertion names its stderr when it said anything else.
    """
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, str(script), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGKILL)
        returncode = proc.wait(timeout=60)
    stderr = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert line.startswith(prefix), f"child said {line!r}; stderr:\n{stderr}"
    assert returncode == -signal.SIGKILL
    return line


def kill_when_awaiting(script, *args: str, session_id: str) -> str:
    """Run the child ``script`` with ``args`` until it prints ``AWAITING <session_id> <id>``
    (right after its mandatory save), SIGKILL it, and return the id it printed."""
    _, sid, approval_id = run_until_line(script, *args, prefix="AWAITING ").split()
    assert sid == session_id
    return approval_id
