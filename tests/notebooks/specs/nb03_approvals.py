"""Notebook 03_approvals.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "03_approvals.ipynb"

CELLS = [
    md("""
# 03 · Approvals: a human decides before a dangerous tool runs

A tool marked `risk="dangerous"` never runs on the model's say-so. The run pauses,
saves its state, and shows an approval card in the chat; it goes on when you click
**Approve** or **Deny** (or decide in code through `runtime.controller`).
Because the pause is saved, it survives a kernel restart: the last part of this
notebook restores the session into a new runtime and decides there.

The sessions live in `.arknb/03_approvals/` next to this notebook (git-ignored).
Restart the kernel while a card waits and **Run All**: the last section's card comes
back, and **Approve** completes that run once. Delete the folder to start over.
"""),
    code("""
from pathlib import Path

import arknb as ark

CLEARED = []  # what clear_cache did in this kernel, so you can count it


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    \"\"\"Delete every file under a cache folder.\"\"\"
    CLEARED.append(path)
    return f"cleared {path}"


@ark.tool
def cache_size(path: str) -> str:
    \"\"\"Report the size of a cache folder.\"\"\"
    return f"{path}: 120 MB"


TOOLS = [clear_cache, cache_size]
SESSION = "approvals-demo"
STATE_DIR = Path(".arknb") / "03_approvals"  # a fixed folder: it outlives the kernel
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
# fresh=True: this tutorial's first session starts over on every Run All. Without it, a
# runtime given the id of a saved session continues that session (the last section does).
runtime = ark.AgentRuntime(model, tools=TOOLS, storage=storage, session_id=SESSION, fresh=True)
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
what the card's buttons decide. (Clicked **Approve** already? Then nothing is pending
any more, the run went on by itself, and these cells just show how it ended.)
"""),
    code("""
result = await handle
print("stop_reason:", result.stop_reason)
for item in runtime.controller.list_pending_approvals():
    print(item.tool_call.name, item.tool_call.arguments, item.risk_level, item.decision)
"""),
    code("""
for item in runtime.controller.list_pending_approvals():
    decision = await runtime.controller.approve(item.approval_id)
    print("ok:", decision.ok, "| decision:", decision.decision, "| all decided:", decision.all_decided)

# Deciding the last item continues the run in the background; wait for it here.
if runtime.current_run is not None:
    await runtime.current_run
result = runtime.last_result
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
That batch is resolved, so deciding it again is refused with
`approval_already_resolved`, carrying the decision that stands, and nothing runs
twice. (While a batch is still pending, deciding one of its items a second time is
an idempotent success reporting the first decision.) `approve` and `deny` answer ok
only once the decision is saved.
"""),
    code("""
decided = runtime.state.resolved_approvals[-1]  # the decisions of resolved batches are kept
again = await runtime.controller.approve(decided.approval_id)
print("ok:", again.ok, "| error:", again.error.code if again.error else None, "| decision:", again.decision)
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
await handle
for item in runtime.controller.list_pending_approvals():
    decision = await runtime.controller.deny(item.approval_id, reason="logs are still needed")
    print("ok:", decision.ok, "| decision:", decision.decision)
if runtime.current_run is not None:
    await runtime.current_run
result = runtime.last_result
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
Python objects are gone, but the state in `STATE_DIR` is not. A runtime built with
the same `storage` and `session_id` continues the saved session: it loads it before
its first run or decision, so it lists and decides the same approvals, and a
`ChatWidget` on it shows the card again. `AgentRuntime.restore` does the same and
fails if nothing was saved; pass the model and tools again (they are code, never
saved). `AgentRuntime(..., fresh=True)` would discard the saved session instead.

Here a second runtime stands in for the restarted kernel. (After a real restart,
re-run the first code cell to define `TOOLS`, `STATE_DIR` and a model.) The newest
runtime of a session owns it: the first one is now detached, and the chat above
refuses to act for it.
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
for item in restored.controller.list_pending_approvals():  # empty if you clicked the card
    await restored.controller.approve(item.approval_id)
if restored.current_run is not None:
    await restored.current_run
result = restored.last_result
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
print("listed:          ", SESSION in await storage.list_sessions())
"""),
    md("""
### Many sessions in one file

`ark.SQLiteStore(path)` keeps every session in one SQLite file and, on each
save, writes only the messages that are new: a long session saves as fast as a
short one. It has the same `load`, `save` and `list_sessions` as `FileStateStorage`,
and more: it is a durable store, on which every model and tool call is recorded as it
happens (notebook 07 shows what that buys after a crash). Close it when you are done.

Every save is a compare-and-swap on the state's `revision`: it lands only if the
store still holds the revision the state was read at, so two kernels never
overwrite each other's progress (the loser gets `state_conflict`). A state copied
into another store is new there: it starts at revision 0.
"""),
    code("""
sqlite_storage = ark.SQLiteStore(STATE_DIR / "sessions.sqlite3")
print("revision in the file store:  ", state.revision)
await sqlite_storage.delete(SESSION)  # this copy starts over on every Run All
revision = await sqlite_storage.save(state.model_copy(update={"revision": 0}))
print("revision in the SQLite store:", revision)
print("sessions:   ", await sqlite_storage.list_sessions())
print("same history:", (await sqlite_storage.load(SESSION)).history == state.history)
await sqlite_storage.aclose()
"""),
    md("""
## A real restart

This last session is left waiting on purpose. Restart the kernel now (Kernel ▸
Restart Kernel) and **Run All**: this cell finds the approval saved in `STATE_DIR`,
continues that session instead of starting a new run, and the chat below shows the
same card again. Click **Approve**: the run completes, once.
"""),
    code("""
LATER = "approvals-restart"
saved = await storage.load(LATER)
waiting = saved is not None and saved.pending_approval is not None  # left waiting before a restart?
turns = [] if waiting else [ark.ScriptedTurn(text="Clearing the downloads.", tool_calls=[clear("c4", "/tmp/downloads")])]
later = ark.AgentRuntime(ark.ScriptedModel(turns + ["Done: /tmp/downloads is cleared."]), tools=TOOLS,
                         storage=storage, session_id=LATER, fresh=not waiting)
await later.load()  # a runtime loads its saved session before it acts; here we ask now
if not waiting:
    await later.run("Clear /tmp/downloads.")  # pauses: awaiting_approval, saved first
for item in later.controller.list_pending_approvals():
    print("waiting for you:", item.tool_call.name, item.tool_call.arguments)
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.ChatWidget(later)
"""),
    md("""
After you click **Approve**, `CLEARED` holds `/tmp/downloads` once, and
`later.last_result.final_message.text` is the model's closing answer.
"""),
]
