"""A real AG-UI server process on a SQLiteStore (for the restart test): prints its URL, serves forever.

Usage: python _server_child.py DB_PATH LOG_FOLDER
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import arknb as ark

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.agui._kit import Counted  # noqa: E402


class HistoryModel:
    """Answers from the history alone, so a new process continues where the old one stopped:
    after a tool result it concludes, otherwise it asks to clear the cache."""

    async def stream(self, request, *, cancel=None):
        last = request.messages[-1]
        if last.role == "tool":
            turn = ark.ScriptedTurn(text=["Cleared ", "it."])
        else:
            turn = ark.ScriptedTurn(text="Clearing.", tool_calls=[ark.ToolCall(
                id="c1", name="clear_cache", arguments_json=json.dumps({"path": "/tmp/cache"}))])
        async for event in ark.ScriptedModel([turn]).stream(request, cancel=cancel):
            yield event

    async def generate(self, request):
        return await ark.ScriptedModel(["unused"]).generate(request)


async def main(db: str, folder: str) -> None:
    counted = Counted(Path(folder))
    store = ark.SQLiteStore(db)
    server = await ark.agui.serve(lambda thread: ark.AgentRuntime(
        HistoryModel(), tools=counted.all, storage=store, session_id=thread))
    print(server.url, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
