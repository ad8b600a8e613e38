"""What the compression crash test and its child share: the script, the tools, the compressor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import arknb as ark
from arknb import ScriptedTurn, ToolCall
from arknb.memory import ContextCompressor

SESSION = "long-talk"


def opening_turns() -> list:
    """Three answers, then (in the fourth run, after its compression) a dangerous call."""
    return [*(ScriptedTurn(text=f"answer{i} " + "lorem " * 60) for i in range(3)),
            ScriptedTurn(text="Archiving the logs.", tool_calls=[ToolCall(
                id="a1", name="archive_logs", arguments_json=json.dumps({"days": 30}), index=0)])]


def tools(directory: Path) -> list:
    """``archive_logs`` (dangerous) appends a line to ``effects.log`` each time it runs."""

    @ark.tool(risk="dangerous")
    def archive_logs(days: int) -> str:
        """Archive the logs older than some days."""
        with (Path(directory) / "effects.log").open("a") as handle:
            handle.write(f"archived {days}\n")
        return f"archived the logs older than {days} days"

    return [archive_logs]


def compressor(directory: Path, *, hang: bool = False) -> ContextCompressor:
    """A small budget; each summary written is logged to ``summaries.log`` (one line per call).
    With ``hang`` the summariser prints ``SUMMARIZING`` and never returns (to be killed there)."""

    async def summarize(messages: list) -> str:
        with (Path(directory) / "summaries.log").open("a") as handle:
            handle.write(f"{len(messages)}\n")
        if hang:
            print("SUMMARIZING", flush=True)
            await asyncio.Event().wait()  # until SIGKILL
        return f"{len(messages)} earlier messages: " + ", ".join(m.text.split()[0] for m in messages if m.text)

    return ContextCompressor(400, keep_last=2, summarize=summarize)


def lines(directory: Path, name: str) -> list[str]:
    path = Path(directory) / name
    return path.read_text().splitlines() if path.exists() else []
