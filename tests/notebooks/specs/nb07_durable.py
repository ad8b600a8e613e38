"""Notebook 07_durable.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "07_durable.ipynb"

CELLS = [
    md("""
# 07 · Durable runs: a crash in the middle of a tool batch

On a durable store (`ark.SQLiteStore` here, `ark.PostgresStore` for many machines)
every model call and every tool call is an **operation**, committed phase by phase:
`executing` before the call starts, its result as soon as it returns. So when the
kernel dies in the middle of a batch, a restored runtime knows exactly what happened:

- a tool that **finished** is never run again: its saved result is reused;
- a tool declared `@ark.tool(idempotent=True)` that was cut short runs again, with the
  same `ctx.idempotency_key`;
- any other tool that **started and left no result** may or may not have done its
  work. arknb does not guess: it is an **in-doubt** item, and you decide.

This notebook runs an agent in a separate process, kills that process with `SIGKILL`
while one of three tools is still running, restores the session here and resolves the
in-doubt call. A side-effect log that every tool appends to shows what ran, and how often.
"""),
    code("""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from collections import Counter
from pathlib import Path

import arknb as ark

WORK = Path(tempfile.mkdtemp(prefix="arknb-durable-"))  # in real use: a folder you keep
DB = WORK / "agent.sqlite3"
EFFECTS = WORK / "effects.log"
SESSION = "report-run"

# The tools live in a module, so the agent process and this notebook share them.
(WORK / "report_tools.py").write_text(textwrap.dedent('''
    import asyncio
    from pathlib import Path

    import arknb as ark

    EFFECTS = Path(__file__).with_name("effects.log")
    MAIL_DELAY = 0.5  # seconds; the agent process below sets an hour, so the crash comes first
    FETCH_DELAY = 0.1


    def record(name, ctx):
        with open(EFFECTS, "a") as log:
            log.write(f"{name} {ctx.call_id}\\\\n")


    @ark.tool
    async def fetch_page(url: str, ctx: ark.ToolContext) -> str:
        \\"\\"\\"Download a page.\\"\\"\\"
        record("fetch_page", ctx)
        await asyncio.sleep(FETCH_DELAY)  # the page takes a moment (the timeline's bar has a width)
        return f"{url}: 3 new incidents"


    @ark.tool
    async def send_report(to: str, ctx: ark.ToolContext) -> str:
        \\"\\"\\"E-mail the report (slow: the mail server takes its time).\\"\\"\\"
        record("send_report", ctx)
        await asyncio.sleep(MAIL_DELAY)
        return f"sent to {to}"


    TOOLS = [fetch_page, send_report]
'''))
sys.path.insert(0, str(WORK))
import report_tools
"""),
    md("""
## The agent, in a process of its own

The script below is an ordinary arknb program on `ark.SQLiteStore`. Its model asks for
three tools in one batch: two page fetches, which finish at once, and `send_report`,
which is still running when we pull the plug.
"""),
    code("""
(WORK / "agent.py").write_text(textwrap.dedent('''
    import asyncio, json, sys
    import arknb as ark
    import report_tools
    from report_tools import TOOLS

    report_tools.MAIL_DELAY = 3600  # this process's mail server hangs: the crash comes first

    def call(call_id, name, index, **arguments):
        return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments), index=index)

    async def main():
        store = ark.SQLiteStore(sys.argv[1])
        model = ark.ScriptedModel([ark.ScriptedTurn(
            text=["Fetching ", "both pages, ", "then mailing ", "the report."], chunk_delay=0.05, tool_calls=[
            call("c1", "fetch_page", 0, url="status.example/a"),
            call("c2", "fetch_page", 1, url="status.example/b"),
            call("c3", "send_report", 2, to="oncall@example.org")])])
        runtime = ark.AgentRuntime(model, tools=TOOLS, storage=store, session_id="report-run")

        async def tell_when_fetched():
            while True:  # both fetches committed, the report still sending
                ops = await store.list_operations("report-run")
                if sum(op.kind == "tool_call" and op.completed for op in ops) == 2:
                    print("READY", flush=True)
                    return
                await asyncio.sleep(0.02)

        asyncio.get_running_loop().create_task(tell_when_fetched())
        await runtime.run("Check both status pages and mail the on-call team.")

    asyncio.run(main())
'''))

agent = subprocess.Popen([sys.executable, str(WORK / "agent.py"), str(DB)], cwd=WORK,
                         stdout=subprocess.PIPE, text=True)
print("agent says:", agent.stdout.readline().strip())
os.kill(agent.pid, signal.SIGKILL)  # the crash: no cleanup, no final save
agent.wait()
print("exit code:", agent.returncode)
print(EFFECTS.read_text())
"""),
    md("""
Both fetches ran, and `send_report` started: whether the mail went out, nobody knows.

## Restore in this kernel

`AgentRuntime.restore` reads the interrupted run's operations. The killed process held
the session's lease, but a lease whose owner process no longer exists on this machine
is free at once, so the restore does not wait. The finished fetches are not in doubt;
`send_report` is:
"""),
    code("""
store = ark.SQLiteStore(DB)
model = ark.ScriptedModel([ark.ScriptedTurn(  # (streamed in steps: the timeline's bar for it has a width)
    text=["Both pages ", "show 3 new incidents; ", "the on-call team ", "has the report."], chunk_delay=0.05)])
runtime = await ark.AgentRuntime.restore(SESSION, storage=store, model=model, tools=report_tools.TOOLS)

for item in runtime.controller.list_in_doubt():
    print(item.tool_call.name, item.tool_call.arguments, "| attempts:", item.attempts)
print("stop reason so far:", runtime.state.last_stop_reason)
"""),
    md("""
The run is paused like an approval (new input is refused until you decide), and the
chat shows the in-doubt call as a card with three choices: **Rerun** (it runs again,
with the same idempotency key, which a mail API can use to drop the duplicate),
**Mark done** (give the result it had) or **Mark failed** (the model is told it
failed). The two fetches that finished before the kill read **reused**: their saved
results stand, and they do not run again.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
chat = ark.ChatWidget(runtime)
chat
"""),
    md("""
Running this notebook top to bottom without clicking? This cell decides in code what
the card's **Mark done** decides: we checked the mail server's log, and the report did
go out. (Clicked a button on the card already? Then nothing is in doubt any more, and
this cell only waits for the run and shows how it ended.)
"""),
    code("""
for item in runtime.controller.list_in_doubt():  # none left if you decided on the card
    decision = await runtime.controller.mark_done(item.operation_id,
                                                  "sent to oncall@example.org (seen in the mail log)")
    print("marked done:", item.tool_call.name, "| ok:", decision.ok)

if runtime.current_run is not None:  # the run goes on in the background; wait for it here
    await runtime.current_run
print("still in doubt:", len(runtime.controller.list_in_doubt()))
print("stop_reason:", runtime.state.last_stop_reason)
print("final text: ", runtime.history[-1].text)
"""),
    md("""
## What ran, and how often

The side-effect log: each fetch ran exactly once, in the killed process, and
`send_report` was not sent a second time (unless you clicked **Rerun**: then the log
shows it twice, and the shared idempotency key is what lets a real mail API drop the copy).
"""),
    code("""
print(Counter(line.split()[0] for line in EFFECTS.read_text().splitlines()))
for message in runtime.history:
    if message.role == "tool":
        print(message.tool_call_id, "->", message.text)
"""),
    md("""
The operations tell the same story: the fetches completed in the first process, the
report was settled by a person, and each model call has its own record.
"""),
    code("""
for op in await store.list_operations(SESSION):
    print(f"{op.kind:10} {op.purpose_key.split(':', 1)[1]:6} {op.phase:9} {op.status:9} "
          f"attempts={len(op.attempts)} settled by={op.result_source or '-'}")
"""),
    md("""
## The timeline, across both processes

Every event of a durable session except the streamed chunks is committed with the
facts that caused it (the outbox), so the events of the killed process are still there.
`store.read_events(session_id)` reads them back in order, and `ark.TimelineWidget`
shows them.
"""),
    code("""
events = await store.read_events(SESSION)
after = [e for e in events if e.type == ark.EventTypes.TOOL_AFTER]
print("events in the outbox:         ", len(events))
ran = [e for e in after if not e.payload.get("reused") and not e.payload.get("settled_by")]
print("tool.after, ran:              ", dict(Counter(e.payload["call"]["id"] for e in ran)))
print("tool.after, result reused:    ", dict(Counter(e.payload["call"]["id"] for e in after if e.payload.get("reused"))))
print("tool.after, settled by:       ", {e.payload["call"]["id"]: e.payload["settled_by"] for e in after
                                         if e.payload.get("settled_by")})
print("in-doubt events:              ", [e.payload["call"]["name"] for e in events
                               if e.type == ark.EventTypes.OPERATION_IN_DOUBT])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget(events)
"""),
    code("""
await runtime.aclose()  # gives the session's lease up
await store.aclose()
"""),
]
