"""The redaction matrix of issue 26 item 1: every key source x every store x every sink x
{literal, escaped, split}, grepping what each sink wrote for the key and its escaped forms.

One *cell* is one run: a key from ``source`` leaks into a run in ``form`` on ``store``;
then every sink the run fed is read back as text (the bytes written, for files and
databases) and searched. The test (``test_redaction_sinks.py``) runs a reduced matrix;
``benchmarks/redaction_matrix.py`` runs all of it and counts.

Key sources:
    secrets   ``AgentRuntime(secrets=[KEY])``; a careless tool returns the key.
    provider  the model's API key (an ``OpenAICompatibleClient`` over an in-process
              transport); the tool returns it.
    env       the same client reading the key from ``DEEPSEEK_API_KEY``.
    shape     a credential-shaped ``sk-...`` value nobody configured; the tool returns it.
    model     the model writes the configured key into a tool call's arguments; the tool
              must receive the real value, and what is recorded of the call must not.
Forms:
    literal   the value as it is;
    escaped   one character ``\\u``-escaped inside a JSON text (what a model may write);
    split     cut in two across adjacent strings (two text parts, two list items).
Sinks: published events (the live ``tool.after`` included), the outbox and operations
rows, saved state, widget payloads, ``TimelineWidget.to_jsonl``, ``ev.trace.to_jsonl``,
OpenTelemetry attributes, an ``ev.Recorder`` cassette.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import arknb as ark
import arknb.eval as ev
from arknb import EventTypes
from arknb.domain import ContentPart, ToolCall, ToolResult
from arknb.providers.openai_compat import OpenAICompatibleClient, RetryPolicy, deepseek
from arknb.providers.scripted import ScriptedTurn

__all__ = ["FORMS", "KEY", "SHAPE", "SINKS", "SOURCES", "STORES", "Cell", "leaks", "run_cell"]

KEY = "arknb-matrix-7Hq2-0123456789abcdefghij"  # not credential-shaped: only knowing it catches it
SHAPE = "sk-proj-Q7xL2mN9pR4tV8wZ1bC5dF3gH6jK0"  # credential-shaped, known to nobody
ENV = "DEEPSEEK_API_KEY"
SOURCES = ("secrets", "provider", "env", "shape", "model")
STORES = ("default", "memory", "file", "sqlite", "postgres")
"""default: no storage given (MemoryStateStorage); memory: the durable MemoryStore (operations and
outbox in memory); file: FileStateStorage; sqlite and postgres: the durable stores."""
FORMS = ("literal", "escaped", "split")
SINKS = ("events", "tool.after", "outbox", "operations", "state", "widgets", "timeline.jsonl", "trace.jsonl",
         "otel", "cassette")
_CUT = 13  # where a split value is cut


def escaped(value: str) -> str:
    """``value`` with one character written as a JSON ``\\u`` escape."""
    return value[:6] + "\\u%04x" % ord(value[6]) + value[7:]


def leaks(text: str, value: str, form: str) -> list[str]:
    """What of ``value`` ``text`` still shows: the value (also once every ``\\u`` and
    ``\\/`` escape, at any depth, is decoded) and, for a split value, either half."""
    found = []
    decoded = text
    for _ in range(4):
        decoded = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), decoded)
        decoded = re.sub(r"\\+/", "/", decoded)
    if value in text:
        found.append("literal")
    elif value in decoded:
        found.append("escaped")
    if form == "split":
        for half in (value[:_CUT], value[_CUT:]):
            if half in decoded:
                found.append(f"half {half[:3]}...")
    return found


@dataclass
class Cell:
    """What one run left in each sink."""

    source: str
    store: str
    form: str
    texts: dict[str, str] = field(default_factory=dict)
    tool_got: list[str] = field(default_factory=list)
    reports: int = 0

    @property
    def value(self) -> str:
        return SHAPE if self.source == "shape" else KEY

    def failures(self) -> list[str]:
        out = []
        for sink, text in self.texts.items():
            found = leaks(text, self.value, self.form)
            if found:
                out.append(f"{self.source}/{self.store}/{self.form}: {sink}: {', '.join(found)}")
        return out


def _leaked_result(value: str, form: str) -> ToolResult:
    if form == "literal":
        return ToolResult.from_text(f"the value is {value}")
    if form == "escaped":
        return ToolResult.from_text('{"value": "%s"}' % escaped(value))
    return ToolResult.from_parts([ContentPart.from_text("first " + value[:_CUT]),
                                  ContentPart.from_text(value[_CUT:] + " last")])


def _arguments(value: str, form: str) -> str:
    if form == "literal":
        return json.dumps({"token": value})
    if form == "escaped":
        return '{"token": "%s"}' % escaped(value)
    return json.dumps({"parts": ["a " + value[:_CUT], value[_CUT:] + " b"]})


def _tools(cell: Cell) -> list:
    @ark.tool
    def leak() -> ToolResult:
        """Return a credential (a careless tool)."""
        return _leaked_result(cell.value, cell.form)

    @ark.tool
    def use_token(token: str = "", parts: list[str] | None = None) -> str:
        """Use a token the model wrote."""
        cell.tool_got.append(token or "".join(p.removeprefix("a ").removesuffix(" b") for p in parts or ()))
        return "used"

    return [leak, use_token]


def _call(cell: Cell) -> ToolCall:
    if cell.source == "model":
        return ToolCall(id="c1", name="use_token", arguments_json=_arguments(KEY, cell.form))
    return ToolCall(id="c1", name="leak", arguments_json="{}")


def _sse(*objs: dict) -> bytes:
    return "".join(f"data: {json.dumps(o)}\n\n" for o in objs).encode() + b"data: [DONE]\n\n"


def _delta(delta: dict, finish: str | None = None) -> dict:
    return {"id": "x", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _http_model(call: ToolCall, api_key: str | None) -> OpenAICompatibleClient:
    """A real OpenAI-compatible client over an in-process transport scripted with two turns."""
    bodies = [
        _sse(_delta({"tool_calls": [{"index": 0, "id": call.id, "type": "function",
                                     "function": {"name": call.name, "arguments": call.arguments_json}}]}),
             _delta({}, "tool_calls")),
        _sse(_delta({"content": "done"}), _delta({}, "stop")),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == f"Bearer {KEY}"
        return httpx.Response(200, content=bodies.pop(0), headers={"content-type": "text/event-stream"})

    return OpenAICompatibleClient(deepseek().replace(base_url="http://127.0.0.1:9/v1"), api_key=api_key, model="m",
                                  http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
                                  retry=RetryPolicy(max_retries=0))


def _storage(store: str, folder: Path, dsn: str | None) -> Any:
    if store == "default":
        return None
    if store == "memory":
        from arknb.durable import MemoryStore

        return MemoryStore()
    if store == "file":
        return ark.FileStateStorage(folder / "states")
    if store == "sqlite":
        return ark.SQLiteStore(folder / "arknb.db")
    return ark.PostgresStore(dsn)


def _rows(store: str, folder: Path, dsn: str | None) -> dict[str, str]:
    """Every row of every table of a durable store, by table, as text."""
    tables: dict[str, list[str]] = {}
    if store == "sqlite":
        conn = sqlite3.connect(folder / "arknb.db")
        try:
            names = [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
            for name in names:
                tables[name] = [repr(row) for row in conn.execute(f'select * from "{name}"')]
        finally:
            conn.close()
    elif store == "postgres":
        import psycopg

        with psycopg.connect(dsn) as conn:
            names = [r[0] for r in conn.execute(
                "select table_name from information_schema.tables where table_schema = 'public'")]
            for name in names:
                tables[name] = [r[0] for r in conn.execute(f'select row_to_json(t)::text from "{name}" t')]
    return {name: "\n".join(rows) for name, rows in tables.items()}


def _files(folder: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file())


async def run_cell(source: str, store: str, form: str, folder: Path, dsn: str | None = None) -> Cell:
    """Run one cell in ``folder`` (empty, owned by the caller) and read back every sink."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from arknb.widgets import ChatWidget, TimelineWidget

    cell = Cell(source, store, form)
    call = _call(cell)
    saved_env = os.environ.pop(ENV, None)
    if source == "env":
        os.environ[ENV] = KEY
    try:
        if source in ("provider", "env"):
            inner: Any = _http_model(call, KEY if source == "provider" else None)
        else:
            inner = ark.ScriptedModel([ScriptedTurn(tool_calls=(call,)), "done"])
        model = ev.Recorder(inner, folder / "cassette.jsonl", mode="all")
        secrets = [KEY] if source in ("secrets", "model") else []
        storage = _storage(store, folder, dsn)
        runtime = ark.AgentRuntime(model, tools=_tools(cell), storage=storage, session_id="matrix", secrets=secrets)
        events: list[ark.AgentEvent] = []
        runtime.bus.subscribe(EventTypes.ANY, events.append)
        sent: list = []
        timeline = TimelineWidget(runtime, interval=0, call_later=lambda delay, callback: None)
        chat = ChatWidget(runtime, interval=0, call_later=lambda delay, callback: None)
        for widget in (timeline, chat):
            widget.send = lambda content, buffers=None: sent.append(content)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        ev.otel.instrument(runtime, tracer_provider=provider, capture_content=True)
        result = await runtime.run("go")
        assert result.stop_reason == "completed", result.error
        timeline.to_jsonl(folder / "timeline.jsonl")
        ev.trace.to_jsonl(events, folder / "trace.jsonl")
        spans = [{"name": s.name, "attributes": dict(s.attributes or {}),
                  "events": [dict(e.attributes or {}) for e in s.events]} for s in exporter.get_finished_spans()]
        provider.shutdown()
        texts = cell.texts
        texts["events"] = "\n".join(e.to_json() for e in events)
        texts["tool.after"] = "\n".join(e.to_json() for e in events if e.type == EventTypes.TOOL_AFTER)
        texts["widgets"] = json.dumps([sent, chat.transcript, timeline.events], default=str, ensure_ascii=False)
        texts["timeline.jsonl"] = (folder / "timeline.jsonl").read_text()
        texts["trace.jsonl"] = (folder / "trace.jsonl").read_text()
        texts["otel"] = json.dumps(spans, default=str, ensure_ascii=False)
        texts["cassette"] = (folder / "cassette.jsonl").read_text()
        storage = runtime.storage
        texts["state"] = (await storage.load("matrix")).to_json() + runtime.state.to_json()
        if store == "memory":
            texts["outbox"] = "\n".join(e.to_json() for e in await storage.read_events("matrix"))
            texts["operations"] = "\n".join(op.to_json() for op in await storage.list_operations("matrix"))
        if store in ("sqlite", "postgres"):
            rows = _rows(store, folder, dsn)
            texts["outbox"] = rows.pop("outbox", "") + "\n".join(
                e.to_json() for e in await storage.read_events("matrix"))
            texts["operations"] = rows.pop("operations", "")
            texts["state"] += "\n".join(rows.values())
        texts["files"] = _files(folder)
        cell.reports = sum(1 for e in events if e.type == EventTypes.SECRET_REDACTED)
        await runtime.aclose()
        aclose = getattr(storage, "aclose", None)
        if aclose is not None:
            await aclose()
        close = getattr(inner, "aclose", None)
        if close is not None:
            await close()
    finally:
        os.environ.pop(ENV, None)
        if saved_env is not None:
            os.environ[ENV] = saved_env
    return cell
