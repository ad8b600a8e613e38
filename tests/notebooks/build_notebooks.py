"""Write the tutorial notebooks in ``notebooks/`` from the cell lists below.

The notebooks are the product; this script only keeps their JSON tidy (stable cell
ids, one kernelspec, no stray metadata). After changing a notebook here:

    .venv/bin/python tests/notebooks/build_notebooks.py          # write the .ipynb files
    .venv/bin/python tests/notebooks/build_notebooks.py --execute  # and run them in place

Commit the executed notebooks: nbval compares their stored outputs with a fresh run.
Cells whose output is volatile (widget views, timings) start with
``# NBVAL_IGNORE_OUTPUT``; everything else is checked. Widget views and saved widget
state are stripped after execution (they embed the JS bundle and random ids).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"


def md(text: str) -> tuple[str, str]:
    return ("markdown", text.strip("\n"))


def code(text: str) -> tuple[str, str]:
    return ("code", text.strip("\n"))


# --------------------------------------------------------------------------- 01

QUICKSTART = [
    md("""
# 01 · Quickstart: an agent with tools in a chat

This notebook builds a small agent and talks to it in a chat widget. It needs no API
key: `ark.ScriptedModel` plays a script of model answers, so every run is the same
and works offline. Notebook `05_real_models` swaps in a real model.

What you will see:

1. tools from plain typed functions (`@ark.tool`),
2. a run awaited in a cell (`await runtime.run(...)`),
3. the same runtime in a `ChatWidget`, streaming as it runs,
4. the events every run publishes.
"""),
    code("""
import arknb as ark
"""),
    md("""
## Tools

`@ark.tool` reads the name, the docstring and the JSON Schema of the arguments from
the function itself. The model only ever sees that schema; the runtime validates the
arguments before it calls your function.
"""),
    code("""
@ark.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


@ark.tool
def multiply(a: int, b: int) -> int:
    \"\"\"Multiply two integers.\"\"\"
    return a * b


print(add.name, "-", add.description)
print(sorted(add.parameters["properties"]))
"""),
    md("""
## A scripted model

Each `ScriptedTurn` is one model answer: text (a string, or a list of streamed
chunks) and optionally tool calls. The first turn asks for `add`; after the runtime
runs the tool and sends its result back, the second turn answers.
The remaining turns are there for the chat widget below.
"""),
    code("""
model = ark.ScriptedModel([
    # run 1: "What is 1 + 2?"
    ark.ScriptedTurn(text=["Let me ", "add that."],
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text=["1 + 2 ", "is ", "**3**."]),
    # run 2, started from the chat or the cell below: "And 6 times 7?"
    ark.ScriptedTurn(text="I will multiply.",
                     tool_calls=[ark.ToolCall(id="c2", name="multiply", arguments_json='{"a": 6, "b": 7}')]),
    ark.ScriptedTurn(text=["6 × 7 ", "= **42**. ", "That was the ", "last scripted ", "answer."],
                     chunk_delay=0.05),
    # anything typed into the chat after that
    *["(scripted) I only know a script. Notebook 05 shows how to plug in a real model."] * 5,
])

runtime = ark.AgentRuntime(model, tools=[add, multiply], system_prompt="Be brief.")
"""),
    md("""
## Run it in a cell

`await runtime.run(...)` runs the agent loop to the end and returns an
`AgentRunResult`.
"""),
    code("""
result = await runtime.run("What is 1 + 2?")
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
print("turns:      ", result.turns)
"""),
    md("""
The conversation is in `runtime.state.history`: the user's question, the assistant's
tool call, the tool's result and the answer.
"""),
    code("""
for message in runtime.state.history:
    calls = [f"{c.name}({c.arguments})" for c in message.tool_calls]
    print(f"{message.role:<9} {message.text!r} {' '.join(calls)}")
"""),
    md("""
## The same runtime in a chat

The widget shows the history so far. Type into its box and press Enter: the widget
calls `runtime.start(...)`, which runs the agent as a background task, so the cell
has already returned and the chat (and its **Stop** button) stays live.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
chat = ark.ChatWidget(runtime)
chat
"""),
    md("""
You can also start a run from code. `runtime.start` returns at once with a
`RunHandle`; watch the answer stream into the chat above, then await the handle.
"""),
    code("""
handle = runtime.start("And 6 times 7?")
result = await handle
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
## Events

Every step of a run is published on `runtime.bus` as an `AgentEvent`. Listeners
only observe (hooks, in notebook 02, can change a run). Subscribe with the
`ark.EventTypes` constants, never with bare strings.
"""),
    code("""
seen = []
unsubscribe = runtime.bus.subscribe(ark.EventTypes.ANY, lambda event: seen.append(event.type))
result = await runtime.run("Thanks!")
unsubscribe()
print(result.final_message.text)
print(seen)
"""),
    md("""
Next: notebook 02 changes runs with hooks, 03 puts a human in the loop with
approvals, 04 inspects a trace, 05 uses a real model.
"""),
]

# --------------------------------------------------------------------------- 02

HOOKS = [
    md("""
# 02 · Hooks: change a run from plain functions

A hook is an ordinary function with a decorator. It receives a frozen snapshot
(the *context*) and returns `None` to let things proceed, or a result that changes
or stops the run. Hooks run in registration order and each is awaited, so what one
changes the next one sees.

This notebook writes three hooks and watches their decisions in the timeline:

1. redact e-mail addresses from the streamed answer (`on_model_chunk`),
2. rewrite a tool call's arguments (`before_tool_call`),
3. deny a tool with a synthetic result (`before_tool_call`).
"""),
    code("""
import re

import arknb as ark


@ark.tool
def lookup_user(email: str) -> str:
    \"\"\"Find a user by e-mail address.\"\"\"
    users = {"ada@example.com": "Ada Lovelace (admin)"}
    return users.get(email, "no such user")


@ark.tool
def delete_user(email: str) -> str:
    \"\"\"Delete a user account.\"\"\"
    return f"deleted {email}"


model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Looking up ", "ADA@Example.com ", "for you."],
                     tool_calls=[ark.ToolCall(id="c1", name="lookup_user",
                                              arguments_json='{"email": "  ADA@Example.com "}')]),
    ark.ScriptedTurn(text=["Found her: Ada Lovelace. ", "Now deleting ", "ada@example.com."],
                     tool_calls=[ark.ToolCall(id="c2", name="delete_user",
                                              arguments_json='{"email": "ada@example.com"}')]),
    ark.ScriptedTurn(text="I was not allowed to delete the account."),
])
runtime = ark.AgentRuntime(model, tools=[lookup_user, delete_user])
"""),
    md("""
## 1. Redact PII from streamed chunks

`on_model_chunk` sees every chunk before it reaches anyone else: the chat, the
history and the saved state all get the redacted text (the raw model output stays
visible in the run's events). Returning `ModelChunkHookResult.proceed(text=...)`
replaces the chunk. (A hook that needs to see an address split across two chunks can
return `.hold()` to have the chunk re-offered joined with the next one.)
"""),
    code("""
EMAIL = re.compile(r"[\\w.+-]+@[\\w-]+\\.[\\w.]+")


@runtime.hooks.on_model_chunk
def redact_pii(ctx):
    if ctx.text and EMAIL.search(ctx.text):
        return ark.ModelChunkHookResult.proceed(text=EMAIL.sub("[email]", ctx.text))
    return None
"""),
    md("""
## 2. Rewrite a tool call's arguments

The model sent `"  ADA@Example.com "`. This hook normalises the address before the
tool runs. The rewritten call keeps the original call id.
"""),
    code("""
@runtime.hooks.before_tool_call(name="normalise_email")
def normalise_email(ctx):
    email = ctx.call.arguments.get("email")
    if isinstance(email, str) and email != email.strip().lower():
        return ark.ToolCallHookResult.proceed(ctx.call.with_arguments({"email": email.strip().lower()}))
    return None
"""),
    md("""
## 3. Deny a tool with a synthetic result

`deny` skips the tool and hands the model a result you wrote instead; the run goes on.
"""),
    code("""
@runtime.hooks.before_tool_call(name="no_deletes")
def no_deletes(ctx):
    if ctx.call.name == "delete_user":
        refusal = ark.ToolResult.from_text("Deleting users is not allowed from this notebook.", is_error=True)
        return ark.ToolCallHookResult.deny(refusal, "policy: no deletes")
    return None


print(runtime.hooks.names())
"""),
    md("""
## Re-running a cell replaces the hook

Registering a hook under a name that is already there replaces it in place. Run the
cell above again (or this one, which registers `no_deletes` a second time): the list
of hooks stays the same length.
"""),
    code("""
@runtime.hooks.before_tool_call(name="no_deletes")
def no_deletes(ctx):
    if ctx.call.name == "delete_user":
        refusal = ark.ToolResult.from_text("Deleting users is not allowed from this notebook.", is_error=True)
        return ark.ToolCallHookResult.deny(refusal, "policy: no deletes")
    return None


print(runtime.hooks.names())
print(len(runtime.hooks), "hooks")
"""),
    md("""
## Run it and watch the decisions

The timeline shows every event of the run; filter it to `hook.decision` to see what
each hook changed, and click a row for the before/after diff.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline = ark.TimelineWidget(runtime)
timeline
"""),
    code("""
decisions = []
unsubscribe = runtime.bus.subscribe(ark.EventTypes.HOOK_DECISION, decisions.append)
result = await runtime.run("Please look up ada and then delete her account.")
unsubscribe()

print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
for event in decisions:
    p = event.payload
    print(f"{p['slot']:<18} {p['hook']:<16} {p['action']}")
"""),
    md("""
What entered the history is the redacted text, the tool ran with the normalised
address, and the denied call got the synthetic result:
"""),
    code("""
for message in runtime.state.history:
    print(f"{message.role:<9} {message.text}")
"""),
    md("""
Hooks come off with `runtime.hooks.remove(name)` or `runtime.hooks.clear()`.
"""),
    code("""
runtime.hooks.remove("no_deletes")
print(runtime.hooks.names())
"""),
]

# --------------------------------------------------------------------------- 03

APPROVALS = [
    md("""
# 03 · Approvals: a human decides before a dangerous tool runs

A tool marked `risk="dangerous"` never runs on the model's say-so. The run pauses,
saves its state, and shows an approval card in the chat; it goes on when you click
**Approve** or **Deny** (or decide in code through `runtime.controller`).
Because the pause is saved, it survives a kernel restart: the last part of this
notebook restores the session into a new runtime and decides there.
"""),
    code("""
import tempfile
from pathlib import Path

import arknb as ark


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    \"\"\"Delete every file under a cache folder.\"\"\"
    return f"cleared {path}"


@ark.tool
def cache_size(path: str) -> str:
    \"\"\"Report the size of a cache folder.\"\"\"
    return f"{path}: 120 MB"


TOOLS = [clear_cache, cache_size]
SESSION = "approvals-demo"
STATE_DIR = Path(tempfile.mkdtemp(prefix="arknb-approvals-"))  # in real use: a folder you keep
storage = ark.FileStateStorage(STATE_DIR)


def clear(call_id, path):
    return ark.ToolCall(id=call_id, name="clear_cache", arguments_json=f'{{"path": "{path}"}}')


model = ark.ScriptedModel([
    # run 1: approved
    ark.ScriptedTurn(text="The cache is 120 MB; I will clear it.", tool_calls=[clear("c1", "/tmp/cache")]),
    ark.ScriptedTurn(text="Done: /tmp/cache is cleared."),
    # run 2: denied
    ark.ScriptedTurn(text="I will clear the logs too.", tool_calls=[clear("c2", "/var/log/app")]),
    ark.ScriptedTurn(text="Understood, I left /var/log/app alone."),
    # run 3: paused, then decided after a "restart"
    ark.ScriptedTurn(text="Clearing the build cache.", tool_calls=[clear("c3", "/tmp/build")]),
])
runtime = ark.AgentRuntime(model, tools=TOOLS, storage=storage, session_id=SESSION)
"""),
    md("""
## The chat, and a run that needs approval

`runtime.start` runs in the background, so the chat's buttons work while the run
waits. An approval card appears in the chat: click **Approve**.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
chat = ark.ChatWidget(runtime)
chat
"""),
    code("""
handle = runtime.start("Please clear the cache at /tmp/cache.")
"""),
    md("""
The run ended its first part as `awaiting_approval`, with the pending batch saved.
Running this notebook top to bottom without clicking? The cells below decide in code
what the card's buttons decide.
"""),
    code("""
result = await handle
print("stop_reason:", result.stop_reason)
pending = runtime.controller.list_pending_approvals()
for item in pending:
    print(item.tool_call.name, item.tool_call.arguments, item.risk_level, item.decision)
"""),
    code("""
decision = await runtime.controller.approve(pending[0].approval_id)
print("ok:", decision.ok, "| decision:", decision.decision, "| all decided:", decision.all_decided)

# Deciding the last item continues the run in the background; wait for it here.
result = await runtime.current_run
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
That batch is resolved and gone, so deciding it again is refused with a clear
error, and nothing runs twice. (While a batch is still pending, deciding one of its
items a second time is an idempotent success reporting the first decision.)
"""),
    code("""
again = await runtime.controller.approve(pending[0].approval_id)
print("ok:", again.ok, "| error:", again.error.code if again.error else None)
print("model calls so far:", len(model.requests))
"""),
    md("""
## Deny

Denying sends the model an error result for that call (`tool_denied`), with your
reason, and the run goes on.
"""),
    code("""
handle = runtime.start("Clear /var/log/app as well.")
"""),
    code("""
result = await handle
pending = runtime.controller.list_pending_approvals()
decision = await runtime.controller.deny(pending[0].approval_id, reason="logs are still needed")
print("ok:", decision.ok, "| decision:", decision.decision)
result = await runtime.current_run
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
What the model received for the denied call:
"""),
    code("""
tool_message = model.requests[-1].messages[-1]
print(tool_message.role, "|", tool_message.text)
"""),
    md("""
## Restore after a kernel restart

A pending approval is saved before the card appears. After a kernel restart your
Python objects are gone, but the state in `STATE_DIR` is not: build a new runtime
from it with `AgentRuntime.restore`, passing the model and tools again (they are
code, never saved). The new runtime lists and decides the same approvals, and a
`ChatWidget` on it shows the card again.

Here a second runtime stands in for the restarted kernel. (After a real restart,
re-run the first code cell to define `TOOLS`, `STATE_DIR` and a model.)
"""),
    code("""
result = await runtime.run("And clear /tmp/build.")
print("stop_reason:", result.stop_reason)
del runtime  # what a restart does to the old objects
"""),
    code("""
restored_model = ark.ScriptedModel(["Done: /tmp/build is cleared."])
restored = await ark.AgentRuntime.restore(
    SESSION, storage=ark.FileStateStorage(STATE_DIR), model=restored_model, tools=TOOLS
)
pending = restored.controller.list_pending_approvals()
for item in pending:
    print(item.tool_call.name, item.tool_call.arguments, item.decision)
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.ChatWidget(restored)
"""),
    code("""
decision = await restored.controller.approve(pending[0].approval_id)
result = await restored.current_run
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
### The manual path

The saved state is plain JSON you can read yourself: `storage.load(session_id)`
returns the `AgentState`, whose `pending_approval` holds the batch (empty now that it
has been decided), next to the full history.
"""),
    code("""
state = await ark.FileStateStorage(STATE_DIR).load(SESSION)
print("pending approval:", state.pending_approval)
print("messages saved:  ", len(state.history))
print("sessions:        ", await storage.list_sessions())
"""),
    md("""
### Many sessions in one file

`ark.SQLiteStateStorage(path)` keeps every session in one SQLite file and, on each
save, writes only the messages that are new: a long session saves as fast as a
short one. It is a drop-in replacement for `FileStateStorage` (same `load`, `save`,
`list_sessions`); close it when you are done.
"""),
    code("""
sqlite_storage = ark.SQLiteStateStorage(STATE_DIR / "sessions.sqlite3")
await sqlite_storage.save(state)
print("sessions:   ", await sqlite_storage.list_sessions())
print("same state: ", await sqlite_storage.load(SESSION) == state)
await sqlite_storage.aclose()
"""),
]

# --------------------------------------------------------------------------- 04

TIMELINE = [
    md("""
# 04 · Timeline: inspect and export a trace

Every run publishes events: model calls and their streamed chunks, tool calls,
hook decisions, saves, the end of the run. `TimelineWidget` draws them as rows and
as a waterfall of spans (runs, model calls, tool calls); you can filter by type and
by run, search, open an event's payload, and export everything as JSONL.
"""),
    code("""
import json
import tempfile
from pathlib import Path

import arknb as ark


@ark.tool
async def fetch_weather(city: str) -> str:
    \"\"\"Current weather for a city.\"\"\"
    return {"Paris": "18°C, cloudy", "Oslo": "4°C, snow"}.get(city, "unknown")


model = ark.ScriptedModel([
    ark.ScriptedTurn(reasoning=["Two cities: ", "call the tool twice."],
                     text="Checking both cities.",
                     tool_calls=[
                         ark.ToolCall(id="w1", name="fetch_weather", arguments_json='{"city": "Paris"}', index=0),
                         ark.ToolCall(id="w2", name="fetch_weather", arguments_json='{"city": "Oslo"}', index=1),
                     ],
                     usage=ark.Usage(input_tokens=42, output_tokens=12)),
    ark.ScriptedTurn(text=["Paris: 18°C, cloudy. ", "Oslo: 4°C, snow."],
                     usage=ark.Usage(input_tokens=80, output_tokens=10)),
])
runtime = ark.AgentRuntime(model, tools=[fetch_weather])
"""),
    md("""
Show the timeline first, then run: it updates live.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline = ark.TimelineWidget(runtime)
timeline
"""),
    code("""
result = await runtime.run("Weather in Paris and Oslo?")
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
## The same trace in code

The widget keeps the events it saw. Their types, in order:
"""),
    code("""
events = timeline.events
print(len(events), "events")
print(" ".join(e["type"] for e in events if e["type"] != ark.EventTypes.LLM_CHUNK))
"""),
    md("""
The two tool calls of one turn ran as one batch (same `batch_id`), concurrently;
their results are ordered by call index:
"""),
    code("""
for e in events:
    if e["type"] == ark.EventTypes.TOOL_AFTER:
        p = e["payload"]
        print(p["call"]["id"], p["call"]["name"], "->", p["result"]["text"])
"""),
    md("""
Spans are what the waterfall draws (times are seconds from the first event):
"""),
    code("""
for span in timeline.spans():
    label = "(run id)" if span["kind"] == "run" else span["label"]
    print(f"{span['kind']:<6} {label:<20} {span['status']}")
"""),
    md("""
## Export

`to_jsonl` writes one event per line; it is also the **Export** button in the
widget. Any tool that reads JSON lines can take it from there.
"""),
    code("""
path = Path(tempfile.mkdtemp()) / "trace.jsonl"
count = timeline.to_jsonl(path)
lines = path.read_text().splitlines()
print(count, "events,", len(lines), "lines")
print(sorted(json.loads(lines[0])))
"""),
    md("""
A timeline can also be built from recorded events, with no runtime:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget([json.loads(line) for line in lines])
"""),
]

# --------------------------------------------------------------------------- 05

REAL_MODELS = [
    md("""
# 05 · Real models: DeepSeek, Zhipu, OpenAI, local servers

Everything in notebooks 01–04 works the same with a real model: replace the
`ScriptedModel` with an `OpenAICompatibleClient`. A *profile* holds what differs
between providers (URL, extensions, reasoning format); the key comes from the
environment and never appears in state, events, errors or reprs.

Cells that need a key check for it and skip cleanly without one, so this notebook
runs top to bottom offline.
"""),
    code("""
import os

import arknb as ark
from arknb.providers import openai_compat as providers
from arknb.providers.openai_compat import OpenAICompatibleClient
"""),
    md("""
## Profiles

| provider | profile | key variable |
|---|---|---|
| OpenAI | `providers.openai()` | `OPENAI_API_KEY` |
| DeepSeek | `providers.deepseek()` | `DEEPSEEK_API_KEY` |
| Zhipu (GLM) | `providers.zhipu()` | `ZHIPUAI_API_KEY` |
| Ollama, vLLM, llama.cpp | `providers.local("http://127.0.0.1:11434/v1")` | none |
"""),
    code("""
for profile in (providers.openai(), providers.deepseek(), providers.zhipu(),
                providers.local("http://127.0.0.1:11434/v1")):
    print(f"{profile.provider_id:<9} {profile.chat_url:<52} key: {profile.api_key_env}")
"""),
    md("""
## A helper that skips without a key

`make_client` returns a client, or `None` (with a message) when the profile's key
variable is not set. Given no `api_key`, the client reads that variable itself when
it makes a request; printing the client never shows the key.
"""),
    code("""
def make_client(profile, model):
    if profile.requires_api_key and not os.environ.get(profile.api_key_env or ""):
        print(f"{profile.api_key_env} is not set: skipping {profile.provider_id}.")
        return None
    return OpenAICompatibleClient(profile, model=model)


async def ask(client, question):
    if client is None:
        return
    runtime = ark.AgentRuntime(client, system_prompt="Answer in one sentence.")
    result = await runtime.run(question)
    print(result.stop_reason, "|", result.final_message.text if result.final_message else result.error)
"""),
    md("""
## DeepSeek
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
# (what this prints depends on whether a key is set)
deepseek = make_client(providers.deepseek(), "deepseek-chat")
await ask(deepseek, "What is the capital of France?")
"""),
    md("""
## Zhipu
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
zhipu = make_client(providers.zhipu(), "glm-4-flash")
await ask(zhipu, "What is the capital of France?")
"""),
    md("""
## OpenAI
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
openai = make_client(providers.openai(), "gpt-4o-mini")
await ask(openai, "What is the capital of France?")
"""),
    md("""
## A local server

Ollama, vLLM and llama.cpp speak the same protocol on a loopback address (plain
HTTP is allowed there only). Set `ARKNB_LOCAL_URL` (for example
`http://127.0.0.1:11434/v1`) and `ARKNB_LOCAL_MODEL` to try it.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
local_url = os.environ.get("ARKNB_LOCAL_URL")
if local_url:
    local = OpenAICompatibleClient(providers.local(local_url), model=os.environ.get("ARKNB_LOCAL_MODEL", "llama3.2"))
    await ask(local, "What is the capital of France?")
else:
    print("ARKNB_LOCAL_URL is not set: skipping the local server.")
"""),
    md("""
## What a real stream looks like, offline

The client is built on `httpx`, and takes your own `httpx.AsyncClient`. Here a
`MockTransport` plays a server's streamed answer, so you can see the whole path
(SSE parsing, chunks, the final message) without a network or a key.
"""),
    code("""
import httpx

SSE = (
    'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris "}}]}\\n\\n'
    'data: {"choices": [{"index": 0, "delta": {"content": "is the capital."}, "finish_reason": "stop"}]}\\n\\n'
    "data: [DONE]\\n\\n"
)


def fake_server(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE.encode())


client = OpenAICompatibleClient(
    providers.openai(), api_key="sk-not-a-real-key", model="gpt-4o-mini",
    http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake_server)),
)
runtime = ark.AgentRuntime(client)
chunks = []
runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, lambda e: chunks.append(e.payload["text"]))
result = await runtime.run("Capital of France?")
print("chunks:     ", chunks)
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
print("key hidden: ", "sk-not-a-real-key" not in repr(client))
"""),
]

NOTEBOOKS_SPEC = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_hooks.ipynb": HOOKS,
    "03_approvals.ipynb": APPROVALS,
    "04_timeline.ipynb": TIMELINE,
    "05_real_models.ipynb": REAL_MODELS,
}


def build(name: str, cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    stem = name.split("_", 1)[0]
    for i, (kind, source) in enumerate(cells):
        maker = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        cell = maker(source)
        cell.id = f"nb{stem}-{i:02d}"  # stable ids keep diffs small
        nb.cells.append(cell)
    return nb


def strip_widget_state(path: Path) -> None:
    """Drop saved widget state and widget views: they embed the whole JS bundle and
    random model ids, and a widget is only live once its cell runs again anyway."""
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs
                            if "application/vnd.jupyter.widget-view+json" not in o.get("data", {})]
    nbformat.write(nb, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run each notebook in place")
    parser.add_argument("only", nargs="*", help="notebook names (default: all)")
    args = parser.parse_args()
    NOTEBOOKS.mkdir(exist_ok=True)
    for name, cells in NOTEBOOKS_SPEC.items():
        if args.only and not any(o in name for o in args.only):
            continue
        path = NOTEBOOKS / name
        nbformat.write(build(name, cells), path)
        print("wrote", path.relative_to(REPO))
        if args.execute:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
            subprocess.run(
                [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "notebook",
                 "--inplace", "--ExecutePreprocessor.timeout=120", str(path)],
                check=True, env=env, cwd=NOTEBOOKS,
            )
            strip_widget_state(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
