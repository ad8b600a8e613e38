"""Notebook 09_memory_and_subagents.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "09_memory_and_subagents.ipynb"

CELLS = [
    md("""
# 09 · Context compression, memory and sub-agents

Three capabilities for longer work, each installed with one keyword:

* **`compressor=ark.ContextCompressor(max_tokens)`** keeps every model request under a
  token budget: older messages are replaced *in the request* by a summary, while
  `state.history` keeps every message. The model can still look the old messages up
  with the built-in `search_history` tool.
* **`memory=ark.EpisodicMemory(folder)`** remembers each completed run as an episode;
  the built-in `retrieve_memory` tool finds episodes again, also from other sessions.
* **`subagents=[ark.SubAgent(...)]`** lets the model hand a task to a child agent with
  `delegate_task(agent, task)`. The child's approvals come to *your* chat, under the
  child's name.

Everything runs on the scripted model: no API key needed.
"""),
    code("""
import asyncio
import json
import tempfile

import arknb as ark


def call(call_id, tool_name, index=0, **arguments):
    return ark.ToolCall(id=call_id, name=tool_name, arguments_json=json.dumps(arguments), index=index)


workdir = tempfile.mkdtemp(prefix="arknb-nb09-")  # a fresh folder each time the notebook runs
"""),
    md("""
## 1. A long conversation under a small budget

The budget here is tiny on purpose (400 estimated tokens), so a few questions are
enough to overflow it. Summaries come from a function of ours, so the output is the
same every time; without `summarize=` the runtime asks its own model for them.

The default token count is an estimate (about 4 characters per token for ASCII, one
per other character, a little per message); pass `count_tokens=` to use a real
tokenizer. Each message is counted once.
"""),
    code("""
def summarize(messages):
    asked = [m.text.split(":")[0] for m in messages if m.role == "user"]
    return f"The user asked about: {', '.join(asked)}. Each was answered in detail."


topics = ["the deploy script", "the staging database", "the backup schedule", "the on-call rota",
          "the log retention", "the TLS certificates"]
answers = [
    "The deploy script is scripts/deploy.sh; run it with --env.",
    "The staging database is db-stage-7 on port 5433.",
    "Backups run nightly at 02:00 and are kept for 30 days.",
    "The on-call rota changes every Monday at 09:00.",
    "Logs are kept for 14 days, then archived.",
    "The certificates renew automatically 30 days before expiry.",
]
model = ark.ScriptedModel([a + " " + "More details follow. " * 8 for a in answers] + [
    ark.ScriptedTurn(tool_calls=[call("s1", "search_history", query="staging database port")]),
    "The staging database is db-stage-7, on port 5433.",
])
runtime = ark.AgentRuntime(model, system_prompt="You answer questions about our infrastructure.",
                           compressor=ark.ContextCompressor(400, keep_last=2, summarize=summarize))
compressions = []
unsubscribe = runtime.bus.subscribe(ark.EventTypes.CONTEXT_COMPRESSED, compressions.append)

for topic in topics:
    await runtime.run(f"{topic}: where is it and how does it work? " + "Please be thorough. " * 4)
print(len(runtime.state.history), "messages in the raw history")
print(len(model.requests[-1].messages), "messages in the last request the model saw")
"""),
    md("""
The raw history keeps all twelve messages; the model saw the system prompt, one summary
and the last messages. Here is the last request, as the model saw it:
"""),
    code("""
for message in model.requests[-1].messages:
    print(f"{message.role:>9}: {message.text[:100]}")
"""),
    md("""
Each summary is recorded with the range of messages it replaces, and reused by later
requests: the summarizer is asked only about messages that newly overflow.
`context.compressed` events report the token estimates before and after.
"""),
    code("""
for s in runtime.state.context_summaries:
    print(f"messages {s.start + 1}-{s.end}: {s.text}")
for event in compressions:
    p = event.payload
    print(f"turn {p['turn']}: {p['before_tokens']} -> {p['after_tokens']} tokens, "
          f"replaced messages 1-{p['replaced']['end']}, new summary: {bool(p['new_summaries'])}")
"""),
    md("""
The details are not lost: the model can search the replaced messages. Ask about
something only the early messages hold:
"""),
    code("""
result = await runtime.run("What was the staging database's port again?")
print(runtime.state.history[-2].text[:300])
print()
print(result.text)
"""),
    md("""
## 2. Memory across two sessions

An `EpisodicMemory` over a folder records an episode when a run completes: the
session, the run, a summary (by default the input and the final answer) and the time.
A second session, here a new runtime with its own memory object over the same folder
(as another notebook or a restarted kernel would have), finds it with
`retrieve_memory`. Ranking is by keywords (BM25); give `embed=` a function returning a
vector to rank by cosine similarity instead.
"""),
    code("""
memory_dir = f"{workdir}/memory"
monday = ark.AgentRuntime(
    ark.ScriptedModel(["Noted: the release freeze runs from December 20 to January 3.",
                       "The release manager this quarter is Dana."]),
    session_id="monday", memory=ark.EpisodicMemory(memory_dir))
await monday.run("Remember: the release freeze runs from December 20 to January 3.")
await monday.run("Who is the release manager this quarter?")

tuesday_model = ark.ScriptedModel([
    ark.ScriptedTurn(tool_calls=[call("m1", "retrieve_memory", query="release freeze dates")]),
    "The freeze runs from December 20 to January 3, so Friday the 22nd is inside it.",
])
tuesday = ark.AgentRuntime(tuesday_model, session_id="tuesday", memory=ark.EpisodicMemory(memory_dir))
result = await tuesday.run("Can we ship on Friday December 22?")
found = tuesday.state.history[2].text  # what retrieve_memory returned (its time stamps left out here)
print("\\n".join(line.split(", 20")[0] + ")" if line.startswith("--- episode") else line
                for line in found.splitlines()))
print()
print(result.text)
"""),
    code("""
memory = ark.EpisodicMemory(memory_dir)
for hit in await memory.retrieve("release manager", k=2):
    print(f"{hit.score:.2f}  [{hit.episode.session_id}] {hit.episode.summary.splitlines()[0]}")
"""),
    md("""
## 3. A delegated task whose dangerous tool you approve from the parent's chat

The `cleaner` sub-agent has a dangerous tool, `clear_cache`. When the parent's model
delegates to it, the child runs in its own session (`ops.cleaner.1`) and pauses for
approval; the parent pauses too, and its chat shows the child's approval card as
`cleaner/approval_…`. Approving it there resumes the child, then the parent's
`delegate_task` call, which answers with the child's final text.

The child's work appears as a collapsible card inside the `delegate_task` card, and in
the timeline below the chat its spans are nested under that call, as they happen.
"""),
    code("""
cleared = []


@ark.tool(risk="dangerous")
async def clear_cache(path: str) -> str:
    \"\"\"Delete a cache folder.\"\"\"
    await asyncio.sleep(0.3)  # deleting takes a moment: the timeline's bar for it has a width
    cleared.append(path)
    return f"cleared {path} (1.2 GB freed)"


storage = ark.FileStateStorage(f"{workdir}/state")
# Small delays between streamed chunks give the model calls real widths in the timeline.
cleaner_model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Clearing ", "the build ", "cache."], chunk_delay=0.05,
                     tool_calls=[call("k1", "clear_cache", path="/var/cache/build")]),
    ark.ScriptedTurn(text=["Cleared /var/cache/build: ", "1.2 GB ", "freed."], chunk_delay=0.05),
])
cleaner = ark.SubAgent("cleaner", "Frees disk space by clearing caches. Tell it which folder.",
                       lambda session_id: ark.AgentRuntime(cleaner_model, tools=[clear_cache], storage=storage,
                                                           session_id=session_id))
parent_model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["I'll ", "ask the ", "cleaner."], chunk_delay=0.05,
                     tool_calls=[call("d1", "delegate_task", agent="cleaner", task="Clear /var/cache/build.")]),
    ark.ScriptedTurn(text=["Done: the cleaner freed ", "1.2 GB in ", "/var/cache/build."], chunk_delay=0.05),
])
ops = ark.AgentRuntime(parent_model, storage=storage, session_id="ops", subagents=[cleaner])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
chat = ark.ChatWidget(ops)
chat
"""),
    md("""
A timeline shows what happens while it is open, so open it before the run starts:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline = ark.TimelineWidget(ops)
timeline
"""),
    code("""
handle = ops.start("The build server is out of disk space.")
result = await handle
print("stop_reason:", result.stop_reason)
for item in ops.controller.list_pending_approvals():
    print(item.approval_id.split("_")[0] + "_…", "|", item.tool_call.name, item.tool_call.arguments, "|", item.reason)
"""),
    md("""
The card in the chat has **Approve** and **Deny**. The next cell does what **Approve**
does, so the notebook also runs top to bottom without clicking (if you clicked it
already, the cell just reports the decision that stands).
"""),
    code("""
pending = ops.controller.list_pending_approvals()
if pending:
    decision = await ops.controller.approve(pending[0].approval_id)
    print("ok:", decision.ok, "| all decided:", decision.all_decided)
result = await ops.current_run if ops.current_run is not None else ops.last_result
print("stop_reason:", result.stop_reason)
print(result.text)
print("clear_cache ran", len(cleared), "time(s)")
"""),
    code("""
child = await storage.load("ops.cleaner.1")
print("child session:", child.session_id, "| ended:", child.last_stop_reason)
for message in child.history:
    print(f"{message.role:>9}: {message.text or message.tool_calls[0].name}")
"""),
    md("""
The timeline above now holds both sessions: the parent's `delegate_task` span with the
child's run (`ops.cleaner.1`) nested under it, its model calls and its `clear_cache`,
including the wait for your approval. Another view of the same timeline shows the same:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline
"""),
    md("""
Events of the child carry `parent_run_id` and `parent_call_id`, which is how the
timeline and the chat nest them:
"""),
    code("""
events = []
unsubscribe = ops.bus.subscribe(ark.EventTypes.ANY, events.append)
again = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("d2", "delegate_task", agent="cleaner",
                                                              task="Check the cache is empty.")]),
                           "All clear."])
ops2 = ark.AgentRuntime(again, storage=storage, session_id="ops-check", subagents=[ark.SubAgent(
    "cleaner", "Frees disk space.", lambda sid: ark.AgentRuntime(ark.ScriptedModel(["It is empty."]),
                                                                 storage=storage, session_id=sid))])
unsubscribe = ops2.bus.subscribe(ark.EventTypes.ANY, events.append)
await ops2.run("Is the cache empty now?")
for e in events:
    if e.type in ("agent.started", "tool.before", "agent.success"):
        print(f"{e.type:14} session={e.session_id:22} parent_call_id={e.parent_call_id}")
"""),
]
