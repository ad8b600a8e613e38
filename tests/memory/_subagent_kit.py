"""What the sub-agent tests share: tools that count their side effects in a file, scripts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import arknb as ark
from arknb import ScriptedModel, ScriptedTurn, ToolCall


def call(call_id: str, name: str, index: int = 0, **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=index)


def delegate(call_id: str, agent: str, task: str, index: int = 0) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[call(call_id, "delegate_task", index, agent=agent, task=task)])


def effect_tools(directory: Path) -> list:
    """``clear_cache`` (dangerous) appends a line to ``effects.log`` each time it runs."""
    effects = Path(directory) / "effects.log"

    @ark.tool(risk="dangerous")
    def clear_cache(path: str) -> str:
        """Delete a cache folder."""
        with effects.open("a") as handle:
            handle.write(f"cleared {path}\n")
        return f"cleared {path}"

    @ark.tool
    def count_files(path: str) -> str:
        """Count the files in a folder."""
        with (Path(directory) / "counted.log").open("a") as handle:
            handle.write(f"counted {path}\n")
        return f"{path} holds 3 files"

    return [clear_cache, count_files]


def cleaner_turns() -> list:
    """The cleaner sub-agent's script: clear the cache (needs approval), then report."""
    return [ScriptedTurn(text="Clearing it.", tool_calls=[call("k1", "clear_cache", path="/tmp/cache")]),
            "The cache at /tmp/cache is cleared."]


def counting_cleaner_turns() -> list:
    """A cleaner that first counts the files (a safe tool that runs at once), then clears
    the cache (needs approval), then reports."""
    return [ScriptedTurn(text="Counting first.", tool_calls=[call("k0", "count_files", path="/tmp/cache")]),
            *cleaner_turns()]


def open_store(kind: str, directory: Path):
    """The store a crash test runs on: ``file`` (FileStateStorage) or ``sqlite`` (SQLiteStore)."""
    if kind == "sqlite":
        return ark.SQLiteStore(Path(directory) / "arknb.sqlite3")
    return ark.FileStateStorage(directory)


def cleaner(directory: Path, storage, turns: list | None = None) -> ark.SubAgent:
    model = ScriptedModel(turns if turns is not None else cleaner_turns())
    return ark.SubAgent("cleaner", "Clears caches. Give it the folder.",
                        lambda sid: ark.AgentRuntime(model, tools=effect_tools(directory), storage=storage,
                                                     session_id=sid))


def effects(directory: Path, name: str = "effects.log") -> list[str]:
    path = Path(directory) / name
    return path.read_text().splitlines() if path.exists() else []


def uploader(directory: Path, storage, turns: list, *, hang: bool = False) -> ark.SubAgent:
    """A sub-agent whose ``upload`` (safe, not idempotent) logs each start to ``uploads.log``;
    with ``hang`` it prints ``UPLOADING`` and never returns (to be killed mid-call)."""

    @ark.tool
    async def upload(filename: str) -> str:
        """Upload a file."""
        with (Path(directory) / "uploads.log").open("a") as handle:
            handle.write(f"upload {filename}\n")
        if hang:
            print("UPLOADING", flush=True)
            await asyncio.Event().wait()  # until SIGKILL
        return f"uploaded {filename}"

    model = ScriptedModel(turns)
    return ark.SubAgent("uploader", "Uploads files.",
                        lambda sid: ark.AgentRuntime(model, tools=[upload], storage=storage, session_id=sid))


def worker(directory: Path, storage, turns: list | None = None, *, on_work=None, on_model_call=None) -> ark.SubAgent:
    """A sub-agent that calls ``work`` (safe, not idempotent) twice, one turn each, then
    answers "Worked twice."; each execution appends ``work <n>`` to ``work.log`` and then
    awaits ``on_work(n)`` when given. ``on_model_call(turn)`` is awaited before each of its
    model calls."""

    @ark.tool
    async def work(n: int) -> str:
        """Do one piece of work."""
        with (Path(directory) / "work.log").open("a") as handle:
            handle.write(f"work {n}\n")
        if on_work is not None:
            await on_work(n)
        return f"worked {n}"

    if turns is None:
        turns = [ScriptedTurn(tool_calls=[call("w1", "work", n=1)]), ScriptedTurn(tool_calls=[call("w2", "work", n=2)]),
                 "Worked twice."]
    model = ScriptedModel(turns)

    def build(session_id: str) -> ark.AgentRuntime:
        runtime = ark.AgentRuntime(model, tools=[work], storage=storage, session_id=session_id)
        if on_model_call is not None:
            @runtime.hooks.before_model_call
            async def before_model(ctx):
                await on_model_call(ctx.turn)
        return runtime

    return ark.SubAgent("worker", "Does work.", build)
