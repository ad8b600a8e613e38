"""Notebook 02_hooks.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "02_hooks.ipynb"

CELLS = [
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
