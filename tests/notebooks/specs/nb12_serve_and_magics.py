"""Notebook 12_serve_and_magics.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "12_serve_and_magics.ipynb"

CELLS = [
    md("""
# 12 · Beyond the cell: serve the agent over AG-UI, and the `%%chat` magic

You prototyped an agent in a notebook: its tools, hooks and approvals. The same agent
can answer a web page while you keep working on it. `ark.agui.serve(runtime_factory)`
serves it over **AG-UI 1.0** (the agent-to-UI protocol: a `RunAgentInput` in, a stream
of events out) on this kernel's own loop, at `127.0.0.1`. Each AG-UI thread is an arknb
session; a dangerous call becomes an **interrupt** that the page answers, through the
same controller the chat's buttons use (saved before it is acknowledged, never run twice).

Then the IPython extension: `%load_ext arknb` gives `%%chat` (talk to a runtime from a
cell) and `%arknb` (what runtimes this kernel has, their hooks, their approvals).

Needs the extra `pip install 'arknb[agui]'`. Everything here is offline, with scripted models.
"""),
    code("""
import json

import httpx

import arknb as ark

CLEARED = []  # what clear_cache did in this kernel


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    \"\"\"Delete every file under a cache folder.\"\"\"
    CLEARED.append(path)
    return f"cleared {path}"


@ark.tool
def cache_size(path: str) -> str:
    \"\"\"Report the size of a cache folder.\"\"\"
    return f"{path}: 120 MB"


def clear(call_id, path):
    return ark.ToolCall(id=call_id, name="clear_cache", arguments_json=json.dumps({"path": path}))


STORAGE = ark.MemoryStateStorage()  # an ark.SQLiteStore(path) keeps threads across restarts


def make_agent(thread_id):
    \"\"\"The agent of notebook 03, one runtime per AG-UI thread (the thread id is the session id).\"\"\"
    model = ark.ScriptedModel([
        ark.ScriptedTurn(text=["The cache is 120 MB; ", "I will clear it."], tool_calls=[clear("c1", "/tmp/cache")]),
        ark.ScriptedTurn(text=["Done: ", "/tmp/cache is cleared."]),
    ])
    return ark.AgentRuntime(model, tools=[clear_cache, cache_size], system_prompt="Be brief.",
                            storage=STORAGE, session_id=thread_id)
"""),
    md("""
## Serve it

`serve` returns at once: the server runs on the kernel's loop, so cells keep running.
Open the link: the page is shipped inside arknb (plain HTML and JavaScript, no CDN). Type
a message, and approve or deny the card that comes back. Any AG-UI client works the same
way (the official `@ag-ui/client`, CopilotKit, ...): POST a `RunAgentInput` to the URL.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
server = await ark.agui.serve(make_agent)  # 127.0.0.1 and a free port; port=... to choose
server
"""),
    md("""
## What a client sees

Here is a client in Python doing what the page does: it POSTs the input and reads the
stream. A run always opens with `RUN_STARTED` and ends with exactly one `RUN_FINISHED`
or `RUN_ERROR`; text arrives as the model writes it (fragments that reach the server's
write together travel as one event); the dangerous call ends the run with an
`interrupt` outcome that carries a readable message, the call's arguments and the JSON
Schema of the answer it expects. Every event is checked against the official
`ag-ui-protocol` types here.
"""),
    code("""
from ag_ui.core import Event
from pydantic import TypeAdapter

EVENT = TypeAdapter(Event)


async def send(body):
    events = []
    async with httpx.AsyncClient(timeout=30) as client:
        async with client.stream("POST", server.url, json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
    for event in events:
        EVENT.validate_python(event)  # raises if the server sent anything off-protocol
    return events


events = await send({"threadId": "notebook-thread", "runId": "run-1",
                     "messages": [{"id": "u1", "role": "user", "content": "Please clear the cache at /tmp/cache."}]})
print("events:", " ".join(dict.fromkeys(e["type"] for e in events if not e["type"].startswith("STEP_"))))
print("streamed text:", "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"))
[interrupt] = events[-1]["outcome"]["interrupts"]
print("interrupt:", interrupt["message"])
print("arguments:", interrupt["metadata"]["arknb"]["arguments"])
print("answer as:", json.dumps(interrupt["responseSchema"]))
print("cleared so far:", CLEARED)
"""),
    md("""
The next input carries a `resume` entry for the interrupt. The server decides it through
`runtime.controller` (saved first), and the run continues in the same stream. Resuming
the same interrupt again gets the decision on record, and nothing runs twice.
"""),
    code("""
approve = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
events = await send({"threadId": "notebook-thread", "runId": "run-2", "messages": [], "resume": approve})
print("events:", " ".join(dict.fromkeys(e["type"] for e in events if not e["type"].startswith("STEP_"))))
print("result:", events[-1]["result"])
print("cleared:", CLEARED)

again = await send({"threadId": "notebook-thread", "runId": "run-3", "messages": [], "resume": approve})
print(again[-1]["type"], again[-1]["code"])
print("cleared:", CLEARED)
"""),
    md("""
A request that does not fit the thread is refused before anything runs, with an error
that names the problem: an unknown interrupt, a resume when nothing waits, a new
message while an interrupt is open. A body that is not a `RunAgentInput` is HTTP 422.
"""),
    code("""
refused = await send({"threadId": "notebook-thread", "runId": "run-4", "messages": [],
                      "resume": [{"interruptId": "approval_nope", "status": "resolved", "payload": {"approved": True}}]})
print(refused[-1]["code"], "|", refused[-1]["message"])
async with httpx.AsyncClient() as client:
    response = await client.post(server.url, json={"threadId": "t", "messages": "hello"})
print(response.status_code, response.json()["error"]["code"])
"""),
    md("""
## The IPython extension

`%load_ext arknb` registers the magics. `%%chat [runtime]` sends the cell to a runtime
(the one created last when none is named) and streams the answer into the cell, as a
chat of this exchange with its approval cards: click **Approve** there. `--new` starts a
new conversation with the same agent.
"""),
    code("""
%load_ext arknb
agent = make_agent("notebook-chat")
"""),
    code("""
%%chat agent
Please clear the cache at /tmp/cache.
""", tags=("nbval-ignore-output",)),
    md("""
Run top to bottom without clicking? `%arknb approvals` lists what waits, and the
controller decides in code what the card decides. (Clicked **Approve** already? Then
nothing waits any more.)
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
if agent.current_run is not None:
    await agent.current_run
%arknb approvals agent
"""),
    code("""
for item in agent.controller.list_pending_approvals():
    await agent.controller.approve(item.approval_id)
if agent.current_run is not None:
    await agent.current_run
print(agent.last_result.stop_reason, "|", agent.last_result.text)
"""),
    md("""
`%arknb` is a table of this kernel's runtimes (the server's threads among them): their
session, store, status, pending items, hooks per slot in the order they run, and where
their tools come from. `%arknb hooks [runtime]` shows the hook order alone.
"""),
    code("""
@agent.hooks.before_tool_call(name="audit")
def audit(ctx):
    return None  # proceed unchanged


%arknb
"""),
    code("""
%arknb hooks agent
"""),
    md("""
Stop the server when you are done (it also stops when the kernel does).
"""),
    code("""
await server.aclose()
print("stopped")
"""),
]
