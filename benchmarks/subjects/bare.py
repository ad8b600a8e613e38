"""Subject (a): the floor. A bare asyncio loop over an async generator of dict events
and a dict tool call: no framework, no validation, no events beyond the stream itself.

``bare_threaded.py`` (subject a') runs the same loop with the tool on a worker thread."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import add_args_json, TURNS, Outcome, ToolCounter, chunk_text, main  # noqa: E402


async def make(chunks: int, *, threaded: bool = False):
    counter = ToolCounter()
    tools = {"add": counter.add}

    async def model(history: list[dict]):
        turn = sum(1 for m in history if m["role"] == "assistant")
        for i in range(chunks):
            yield {"type": "text_delta", "text": chunk_text(turn, i)}
        if turn < TURNS - 1:
            yield {"type": "tool_call", "id": f"call_{turn}", "name": "add",
                   "arguments": add_args_json(turn)}

    async def run() -> Outcome:
        counter.count = 0
        history: list[dict] = [{"role": "user", "content": "Add 2 and 3, nine times."}]
        seen = 0
        while True:
            parts: list[str] = []
            calls: list[dict] = []
            async for event in model(history):
                if event["type"] == "text_delta":
                    seen += 1  # the consumer sees every delta
                    parts.append(event["text"])
                else:
                    calls.append(event)
            history.append({"role": "assistant", "content": "".join(parts), "tool_calls": calls})
            if not calls:
                break
            for call in calls:
                fn, arguments = tools[call["name"]], json.loads(call["arguments"])
                result = await asyncio.to_thread(fn, **arguments) if threaded else fn(**arguments)
                history.append({"role": "tool", "tool_call_id": call["id"], "content": str(result)})
        return Outcome(text_chunks=seen, tool_calls=counter.count)

    return run


if __name__ == "__main__":
    main("bare", make)
