"""Notebook 01_quickstart.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "01_quickstart.ipynb"

CELLS = [
    md("""
# 01 · Quickstart: an agent with tools in a chat

This notebook builds a small agent and talks to it in a chat widget. It needs no API
key and no network: `ark.RuleModel` is an offline model that answers what you type by
keyword rules, and calls your tools when a question asks for them. The same question
always gets the same answer. Notebook `05_real_models` swaps in a real model.

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
## An offline model that answers by rules

Each `ark.Rule` is a pattern (a regular expression, searched in the user's message)
and what to do when it matches: `reply=` some text, or `call=` a tool with `arguments=`
taken from the pattern's groups, then word the final `answer=` from the tool's result.
The first rule that matches answers; `fallback=` answers anything else. (For a fixed
script of answers, whatever the question, there is `ark.ScriptedModel`: the later
notebooks use it.)
"""),
    code("""
def numbers(m):
    return {"a": int(m[1]), "b": int(m[2])}


model = ark.RuleModel([
    ark.Rule(r"(-?\\d+)\\s*(?:\\+|plus)\\s*(-?\\d+)", call="add", arguments=numbers,
             answer="{m[1]} + {m[2]} is **{result}**."),
    ark.Rule(r"(-?\\d+)\\s*(?:\\*|×|times)\\s*(-?\\d+)", call="multiply", arguments=numbers,
             answer="{m[1]} × {m[2]} = **{result}**."),
    ark.Rule(r"\\b(hi|hello|hey|help|what can you do)\\b",
             reply="Hi! I add and multiply whole numbers with my two tools. Try **what is 2 + 3?** or **6 times 7**."),
    ark.Rule(r"\\b(thanks|thank you)\\b", reply="You're welcome!"),
], fallback="Offline I only understand sums and products, like **12 + 30** or **6 times 7**. "
            "Notebook 05 plugs in a real model that answers anything.", chunk_delay=0.03)

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

Things to try: *hi*, *what is 12 + 30?*, *6 times 7*, *-4 plus 9*, and anything else
(the fallback says what it understands). A sum or a product shows a tool card with the
call's arguments and result before the answer.
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
## Stop and Suspend

Every chat has **Stop** and **Suspend**. The run below streams a long answer for about
six seconds, in a chat of its own. Run the next cell, then click **Stop** while the text
streams: the run ends `cancelled` at once, and what streamed so far stays. **Suspend**
is gentler: the run pauses at its next checkpoint (between a model call and a tool
batch, saved first) and **Resume** goes on from there. An answer that is only text has no
checkpoint before its end, so here the chat tells you Suspend gave up when the run
finished. Don't click anything, and the run simply completes.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
long_answer = " ".join(f"Step {i} of 12: still explaining." for i in range(1, 13))
slow = ark.AgentRuntime(ark.RuleModel([], fallback=long_answer, chunk_delay=0.1))  # ~6 s, every time
slow_chat = ark.ChatWidget(slow)
slow_chat
"""),
    code("""
slow_handle = slow.start("Explain, slowly, what a run is.")  # the cell returns: the buttons stay live
"""),
    code("""
result = await slow_handle
print("stop_reason:", result.stop_reason)  # completed, or cancelled if you clicked Stop
"""),
    md("""
Next: notebook 02 changes runs with hooks, 03 puts a human in the loop with
approvals, 04 inspects a trace, 05 uses a real model.
"""),
]
