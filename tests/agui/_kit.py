"""Helpers for the AG-UI tests: a real server on loopback, SSE reading, official validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter

import arknb as ark

EVENT = TypeAdapter(Event)
TERMINAL = ("RUN_FINISHED", "RUN_ERROR")


def validated(raw: dict[str, Any]) -> Any:
    """``raw`` read by the official ag-ui-protocol types (raises if it is not a valid event)."""
    return EVENT.validate_python(raw)


def check_lifecycle(events: list[dict[str, Any]]) -> None:
    """RUN_STARTED first, exactly one RUN_FINISHED / RUN_ERROR, last; every event valid."""
    for raw in events:
        validated(raw)
    assert events and events[0]["type"] == "RUN_STARTED", [e["type"] for e in events]
    terminals = [e for e in events if e["type"] in TERMINAL]
    assert len(terminals) == 1 and events[-1] is terminals[0], [e["type"] for e in events]


def sse_events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


async def post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST one RunAgentInput; the stream's events, checked for the lifecycle."""
    async with client.stream("POST", url, json=body) as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        events = []
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    check_lifecycle(events)
    return events


def run_input(thread: str, run: str, *messages: dict[str, Any], resume: list | None = None,
              tools: list | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"threadId": thread, "runId": run, "messages": list(messages)}
    if resume is not None:
        body["resume"] = resume
    if tools is not None:
        body["tools"] = tools
    return body


def user(text: str, mid: str = "u1") -> dict[str, Any]:
    return {"id": mid, "role": "user", "content": text}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    end = events[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt", end
    return end["outcome"]["interrupts"]


def approve(interrupt_id: str, approved: bool = True, **extra: Any) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": {"approved": approved, **extra}}


class Counted:
    """Tools whose runs are counted in a file (a side effect that survives the process)."""

    def __init__(self, folder: Path) -> None:
        self.log = folder / "ran.txt"
        log = self.log

        @ark.tool(risk="dangerous")
        def clear_cache(path: str) -> str:
            """Delete a cache folder."""
            with log.open("a") as f:
                f.write(f"clear_cache {path}\n")
            return f"cleared {path}"

        @ark.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        self.all = [clear_cache, add]

    def runs(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []
