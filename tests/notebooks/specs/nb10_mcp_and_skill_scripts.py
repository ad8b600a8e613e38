"""Notebook 10_mcp_and_skill_scripts.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "10_mcp_and_skill_scripts.ipynb"

SERVER = '''
import os
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations
from pydantic import BaseModel

NOTES = Path(os.environ["NOTES_DIR"])
server = MCPServer("notes")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_notes() -> list[str]:
    """List the notes."""
    return sorted(p.stem for p in NOTES.glob("*.txt"))


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def delete_note(name: str) -> str:
    """Delete a note for good."""
    (NOTES / f"{name}.txt").unlink()
    return f"deleted {name}"


class Title(BaseModel):
    title: str


@server.tool(annotations=ToolAnnotations(destructiveHint=False))
async def new_note(ctx: Context) -> str:
    """Create a note; asks the person for its title."""
    answer = await ctx.elicit("What should the new note be called?", schema=Title)
    if answer.action != "accept":
        return f"no note created ({answer.action})"
    (NOTES / f"{answer.data.title}.txt").write_text("")
    return f"created {answer.data.title}"


server.run()
'''

CELLS = [
    md("""
# 10 · Tools from everywhere: MCP servers and skill scripts

A tool does not have to be a Python function of this notebook. Two more sources, and
their tools go through the very same pipeline (hooks, approvals, durable operations,
redaction, the chat):

* **`ark.MCPServer.stdio(...)`** / **`ark.MCPServer.http(...)`** connect an MCP server in one
  line (the extra `arknb[mcp]`). The server's own annotations decide what waits for you:
  read-only tools run at once, tools that may be destructive wait for approval, and the
  card names the server, the tool and its annotations. A server can also ask *you*
  something mid-call (an *elicitation*): the chat shows it as a small form.
* **Skill scripts**: a `SKILL.md` folder with `scripts/` gives the model
  `run_skill_script` and `read_skill_file`: no shell, the skill folder as working
  directory, a time limit, capped output, and paths that cannot leave the folder.

Everything runs offline: the MCP server is a small one this notebook writes with the SDK,
and the model is scripted.
"""),
    code('''
import asyncio
import json
import sys
import tempfile
import textwrap
from pathlib import Path

import arknb as ark


def call(call_id, tool_name, index=0, **arguments):
    return ark.ToolCall(id=call_id, name=tool_name, arguments_json=json.dumps(arguments), index=index)


workdir = Path(tempfile.mkdtemp(prefix="arknb-nb10-"))  # a fresh folder each time the notebook runs
notes = workdir / "notes"
notes.mkdir()
for name in ("groceries", "old-draft", "ideas"):
    (notes / f"{name}.txt").write_text(f"{name}\\n")
'''),
    md("""
## 1. An MCP server in one line

The server below is written with the official SDK (`mcp.server.MCPServer`) into a file
and started as a subprocess over stdio. `connect()` starts it and lists its tools; without
it the runtime connects on first use. Each tool keeps the server's JSON Schema as it is.
"""),
    code(f'''
server_file = workdir / "notes_server.py"
server_file.write_text({SERVER!r})

server = ark.MCPServer.stdio(sys.executable, [str(server_file)], name="notes", env={{"NOTES_DIR": str(notes)}})
await server.connect()
for tool in server.current_tools():
    print(f"{{tool.name:12}} risk={{tool.risk.value:9}} read_only={{tool.read_only!s:5}} "
          f"annotations={{tool.source_detail['annotations']}}")
'''),
    md("""
`delete_note` says `destructiveHint: true`, so it waits for a person; `new_note` says
`destructiveHint: false` and runs at once; `list_notes` is read-only. Your overrides win
over the server's hints: `risk={"new_note": "dangerous"}`, `read_only=`, `idempotent=`.

## 2. A destructive tool approved in the chat
"""),
    code('''
model = ark.ScriptedModel([
    ark.ScriptedTurn(text="Let me look, then tidy up.", tool_calls=[
        call("c1", "list_notes"), call("c2", "delete_note", index=1, name="old-draft")]),
    ark.ScriptedTurn(text="Deleted the old draft.", tool_calls=[call("c3", "new_note")]),
    "Your notes are tidy and the new note exists.",
])
runtime = ark.AgentRuntime(model, tools=[server], session_id="nb10")
'''),
    code('''
# NBVAL_IGNORE_OUTPUT
chat = ark.ChatWidget(runtime)
chat
'''),
    code('''
result = await runtime.run("Tidy my notes.")
print("stop_reason:", result.stop_reason)
for item in runtime.controller.list_pending_approvals():
    print(item.tool_call.name, item.tool_call.arguments, "|", item.reason)
    print("annotations:", item.detail["annotations"])
'''),
    md("""
The card in the chat has **Approve** and **Deny**. The next cell does what **Approve** does,
so the notebook also runs top to bottom without clicking.

## 3. A question from the server, answered in the chat

Once approved, the run goes on: the model calls `new_note`, and the server asks for a
title. That question is a pending item of kind `"elicitation"`: saved first, shown in the
chat as a form generated from the server's schema (Accept / Decline / Cancel), and new
input waits until it is answered.
"""),
    code('''
asked = asyncio.get_running_loop().create_future()
runtime.bus.subscribe(ark.EventTypes.APPROVAL_REQUIRED,
                      lambda e: e.payload.get("kind") == "elicitation" and not asked.done() and asked.set_result(e))
pending = runtime.controller.list_pending_approvals()
if pending:
    decision = await runtime.controller.approve(pending[0].approval_id)
    print("approved:", decision.ok)
await asyncio.wait_for(asked, 60)
[question] = runtime.controller.list_elicitations()
print("question:", question.detail["message"])
print("fields:", list(question.detail["schema"]["properties"]))
'''),
    md("""
The chat above now shows the form. The next cell answers it as **Accept** would (if you
answered in the chat already, there is nothing left to answer).
"""),
    code('''
for question in runtime.controller.list_elicitations():
    answered = await runtime.controller.answer_elicitation(question.approval_id, {"title": "weekly-review"})
    print("answered:", answered.ok)
result = await runtime.current_run if runtime.current_run is not None else runtime.last_result
print("stop_reason:", result.stop_reason)
print(result.text)
print("notes now:", sorted(p.stem for p in notes.glob("*.txt")))
'''),
    md("""
## 4. A skill script

A skill folder in the Agent Skills layout: `SKILL.md`, a `scripts/` folder and a
reference file. The front matter marks `word_count.py` as safe, so it runs without asking
(any other script would wait for approval).
"""),
    code('''
skill = workdir / "skills" / "note-stats"
(skill / "scripts").mkdir(parents=True)
(skill / "SKILL.md").write_text(textwrap.dedent("""\\
    ---
    name: note-stats
    description: Count words in notes with the bundled script.
    always_on: true
    scripts:
      word_count.py: {risk: safe, timeout: 10}
    ---
    Run scripts/word_count.py with the note texts as arguments.
    """))
(skill / "scripts" / "word_count.py").write_text(
    "import sys\\nprint(sum(len(arg.split()) for arg in sys.argv[1:]), 'words')\\n")

report = ark.load_skills(workdir / "skills")
skill_model = ark.ScriptedModel([
    ark.ScriptedTurn(tool_calls=[call("s1", "run_skill_script", skill="note-stats", script="word_count.py",
                                      args=["buy milk and eggs", "call the plumber"])]),
    ark.ScriptedTurn(tool_calls=[call("s2", "read_skill_file", skill="note-stats", path="../notes/ideas.txt")]),
    "Seven words in all.",
])
skill_runtime = ark.AgentRuntime(skill_model, skills=report)
await skill_runtime.run("How many words?")
for message in skill_runtime.state.history:
    if message.role == "tool":
        print(f"{message.tool_call_id}: {message.text}")
'''),
    md("""
The second call tried to leave the skill folder with `..` and got an error result that
names the rule; absolute paths and symlinks that lead out are refused the same way.

Finally, close the runtimes: the MCP server's process ends with them (and with the
kernel, if you forget).
"""),
    code('''
await runtime.aclose()
await skill_runtime.aclose()
print("server still connected:", server.connected)
'''),
]
