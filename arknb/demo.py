"""``python -m arknb.demo``: a scripted agent run printed as a live event stream.

Offline and deterministic: the ScriptedModel plays the model, a dangerous tool waits
for approval, and the approval is given in code, as a widget button would.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile

import arknb as ark

__all__ = ["main", "build_runtime"]


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    return f"cleared {path}"


def build_runtime(storage_dir: str, chunk_delay: float = 0.02) -> ark.AgentRuntime:
    """The demo agent: two tools, a PII-redacting chunk hook, file persistence."""
    model = ark.ScriptedModel([
        ark.ScriptedTurn(reasoning=["The user wants ", "a sum."], text=["Let me ", "add ", "that."],
                         tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')],
                         chunk_delay=chunk_delay),
        ark.ScriptedTurn(text=["It is 3. ", "Mail me at ", "alice@", "example.org", "."], chunk_delay=chunk_delay),
        ark.ScriptedTurn(text=["Clearing ", "the cache."],
                         tool_calls=[ark.ToolCall(id="c2", name="clear_cache", arguments_json='{"path": "/tmp/demo"}')],
                         chunk_delay=chunk_delay),
        ark.ScriptedTurn(text=["Done: ", "the cache is clear."], chunk_delay=chunk_delay),
    ])
    runtime = ark.AgentRuntime(model, tools=[add, clear_cache], system_prompt="Be brief.",
                               storage=ark.FileStateStorage(storage_dir), session_id="demo")

    @runtime.hooks.on_model_chunk
    def redact_email(ctx: ark.ModelChunkHookContext):
        # An address may arrive split across chunks: hold a chunk that ends mid-address.
        if ctx.text.endswith("@") and not ctx.final:
            return ark.ModelChunkHookResult.hold("address may continue")
        if "@" in ctx.text:
            return ark.ModelChunkHookResult.proceed("[redacted email]")
        return None

    return runtime


_streaming = False
_shown = 0  # events printed: numbered 1, 2, 3... (the store's sequence gap after a restore stays internal)


def _show(event: ark.AgentEvent) -> None:
    global _streaming, _shown
    p = event.payload
    t = event.type
    if t == ark.EventTypes.LLM_CHUNK:
        if p["kind"] == "tool_call":  # the call is shown whole when it runs
            return
        if not _streaming:
            sys.stdout.write("        ")
            _streaming = True
        text = p["text"] if p["kind"] == "text" else f"({p['text']})"
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if _streaming:
        sys.stdout.write("\n")
        _streaming = False
    detail = ""
    if t in (ark.EventTypes.TOOL_BEFORE, ark.EventTypes.TOOL_AFTER, ark.EventTypes.TOOL_DENIED):
        detail = f"{p['call']['name']}({p['call']['arguments_json']})"
        if "result" in p:
            detail += f" -> {p['result']['text']!r}"
    elif t == ark.EventTypes.HOOK_DECISION:
        detail = f"{p['hook']} {p['action']} in {p['slot']}"
    elif t == ark.EventTypes.APPROVAL_REQUIRED:
        detail = ", ".join(i["tool_call"]["name"] for i in p["items"])
    elif t == ark.EventTypes.STATE_PERSISTED:
        detail = f"{p['reason']}{' (mandatory)' if p['mandatory'] else ''}"
    elif t.startswith("agent.") or t == ark.EventTypes.RUNTIME_DETACHED:
        detail = p.get("stop_reason") or p.get("reason") or ""
    _shown += 1
    print(f"  #{_shown:<5} {t:<18} {detail}")


async def main() -> int:
    """Run the demo; returns a process exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        runtime = build_runtime(tmp)
        runtime.bus.subscribe(ark.EventTypes.ANY, _show)
        print("== run 1: a tool call and a redacting chunk hook ==")
        first = await runtime.run("What is 1 + 2? And how do I reach you?")
        print(f"\n-> {first.stop_reason}: {first.text!r}")
        print("\n== run 2: a dangerous tool waits for approval ==")
        second = await runtime.run("Please clear the cache.")
        print(f"\n-> {second.stop_reason}; pending: "
              f"{[i.tool_call.name for i in runtime.controller.list_pending_approvals()]}")
        restored = await ark.AgentRuntime.restore("demo", storage=runtime.storage, model=runtime.model,
                                                  tools=runtime.tools)
        restored.bus.subscribe(ark.EventTypes.ANY, _show)
        print("\n== restored from disk (as after a kernel restart); approving ==")
        for item in restored.controller.list_pending_approvals():
            decision = await restored.controller.approve(item.approval_id)
            print(f"  approve {item.tool_call.name}: ok={decision.ok} all_decided={decision.all_decided}")
        final = await restored.current_run
        print(f"\n-> {final.stop_reason}: {final.text!r}")
        ok = (first.stop_reason == "completed" and "[redacted email]" in first.text
              and second.stop_reason == "awaiting_approval" and final.stop_reason == "completed")
        print("\nOpen notebooks/01_quickstart.ipynb for the same agent in a chat widget.")
        return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
