"""The IPython extension in a real kernel (jupyter_client + ipykernel): %load_ext arknb,
%%chat, %arknb, %arknb hooks, %arknb approvals, and their messages (DESIGN §18)."""

from __future__ import annotations

import os
import textwrap

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client import KernelManager  # noqa: E402


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path_factory.mktemp("magics")), env=dict(os.environ))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    yield kc
    kc.stop_channels()
    km.shutdown_kernel(now=True)


class Output:
    def __init__(self) -> None:
        self.text: list[str] = []
        self.html: list[str] = []
        self.widgets: list[dict] = []
        self.errors: list[tuple[str, str]] = []

    @property
    def all_text(self) -> str:
        return "\n".join(self.text)


def run(kc, code: str, *, ok: bool = True) -> Output:
    out = Output()

    def hook(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.text.append(content["text"])
            if content["name"] == "stderr" and content["text"].startswith("UsageError: "):
                # IPython shows a magic's UsageError as one line on stderr, without a traceback
                out.errors.append(("UsageError", content["text"].removeprefix("UsageError: ")))
        elif kind in ("display_data", "execute_result"):
            data = content["data"]
            out.text.append(data.get("text/plain", ""))
            if "text/html" in data:
                out.html.append(data["text/html"])
            if "application/vnd.jupyter.widget-view+json" in data:
                out.widgets.append(data["application/vnd.jupyter.widget-view+json"])
        elif kind == "error":
            out.errors.append((content["ename"], content["evalue"]))

    reply = kc.execute_interactive(textwrap.dedent(code), timeout=120, output_hook=hook)
    if ok:
        assert reply["content"]["status"] == "ok" and not out.errors, out.errors
    return out


def test_magics_in_a_real_kernel(kernel):
    run(kernel, "%load_ext arknb")
    # before any runtime exists: a clear message, not a traceback
    empty = run(kernel, "%arknb", ok=False)
    assert empty.errors and empty.errors[0][0] == "UsageError"
    assert "no arknb runtime in this kernel yet" in empty.errors[0][1] and "[runtime_not_found]" in empty.errors[0][1]
    chat = run(kernel, "%%chat\nhello", ok=False)
    assert "no arknb runtime in this kernel yet" in chat.errors[0][1]

    run(kernel, '''
        import arknb as ark

        @ark.tool(risk="dangerous")
        def clear_cache(path: str) -> str:
            """Delete a cache folder."""
            return f"cleared {path}"

        model = ark.ScriptedModel([
            ark.ScriptedTurn(text=["Hello ", "there."]),
            ark.ScriptedTurn(text="Clearing.", tool_calls=[ark.ToolCall(id="c1", name="clear_cache",
                                                                        arguments_json='{"path": "/tmp/c"}')]),
            "Cleared.",
        ])
        agent = ark.AgentRuntime(model, tools=[clear_cache], session_id="demo")

        @agent.hooks.before_tool_call(name="audit", order=1)
        def audit(ctx):
            return None

        @agent.hooks.before_tool_call(name="policy", order=0)
        def policy(ctx):
            return None
    ''')

    # %%chat with no name: the runtime created last; the answer streams into a chat widget
    first = run(kernel, "%%chat\nSay hello")
    assert len(first.widgets) == 1 and first.widgets[0]["model_id"]
    done = run(kernel, "result = await agent.current_run if agent.current_run else agent.last_result\n"
                       "print(result.stop_reason, '|', agent.history[-1].text)")
    assert "completed | Hello there." in done.all_text

    # named, with a dangerous call: the chat shows the approval card; %arknb approvals lists it
    run(kernel, "%%chat agent\nClear the cache")
    run(kernel, "await agent.current_run if agent.current_run else None")
    approvals = run(kernel, "%arknb approvals agent")
    assert "clear_cache" in approvals.all_text and "/tmp/c" in approvals.all_text and "tool" in approvals.all_text
    card = run(kernel, "import json; print(json.dumps([a['tool'] if 'tool' in a else a for a in "
                       "__import__('arknb').ChatWidget(agent).approvals]))")
    assert "clear_cache" in card.all_text

    table = run(kernel, "%arknb")
    text = table.all_text
    assert "agent" in text and "demo" in text and "awaiting_approval" in text and "1 tool" in text
    assert "before_tool_call: policy → audit → approval_policy (built-in)" in text
    assert "python: clear_cache" in text and "MemoryStateStorage" in text
    assert table.html and "<table" in table.html[0]

    hooks = run(kernel, "%arknb hooks demo").all_text  # by session id too
    assert "before_tool_call | policy, audit, approval_policy (built-in)" in hooks
    # an extension's hooks run after the user's, before the built-in policy; its tools are listed by source
    run(kernel, "planned = ark.AgentRuntime(ark.ScriptedModel(['x']), plan_mode=ark.PlanMode.REVIEW, "
                "session_id='planned')")
    assert "before_tool_call | plan:plan_mode, approval_policy (built-in)" in run(kernel, "%arknb hooks planned").all_text
    assert "extension plan: write_todos" in run(kernel, "%arknb").all_text
    run(kernel, "del planned")

    # new input while the approval is open: the runtime's refusal, as a clear message
    refused = run(kernel, "%%chat\nsomething else", ok=False)
    assert refused.errors[0][0] == "UsageError" and "pending_approval_blocks_input" in refused.errors[0][1]

    unknown = run(kernel, "%%chat nobody\nhi", ok=False)
    assert "no runtime named 'nobody'" in unknown.errors[0][1] and "agent (session 'demo')" in unknown.errors[0][1]
    bad = run(kernel, "%arknb hooks nobody", ok=False)
    assert "no runtime named 'nobody'" in bad.errors[0][1]
    usage = run(kernel, "%arknb frobnicate", ok=False)
    assert "usage: %arknb" in usage.errors[0][1]

    # --new: a new conversation with the same agent, on a fresh session
    run(kernel, "await agent.controller.approve(agent.controller.list_pending_approvals()[0].approval_id)\n"
                "await agent.current_run")
    fresh = run(kernel, "%%chat agent --new\nAnyone there?")
    assert len(fresh.widgets) == 1
    listing = run(kernel, "%arknb").all_text
    assert listing.count("demo-") >= 1  # the new session is listed next to the first


def test_chat_new_carries_the_runtimes_extensions_or_names_what_it_cannot(kernel, tmp_path):
    run(kernel, "%load_ext arknb")
    run(kernel, f'''
        import arknb as ark

        def build_worker(session_id):
            return ark.AgentRuntime(ark.ScriptedModel(["done"]), session_id=session_id)

        skill = ark.Skill("tidy", "Tidy things up.", "Tidy the files.")
        planner = ark.AgentRuntime(ark.ScriptedModel(["first", "second"]), session_id="planner",
                                   plan_mode=ark.PlanMode.REVIEW, skills=[skill],
                                   compressor=ark.ContextCompressor(100_000),
                                   memory=ark.EpisodicMemory({str(tmp_path / "memory")!r}),
                                   subagents=[ark.SubAgent("worker", "Does work.", build_worker)])
    ''')
    run(kernel, "%%chat planner --new\nHello")
    carried = run(kernel, '''
        fresh = ark.live_runtimes()[-1]
        print(fresh.session_id.startswith("planner-"), [e.name for e in fresh.extensions] == [e.name for e in planner.extensions])
        print(sorted(e.name for e in fresh.extensions))
        print(all(a is not b for a, b in zip(fresh.extensions, planner.extensions)))
        plan = next(e for e in fresh.extensions if type(e).__name__ == "PlanExtension")
        print(plan.mode.value, "tidy" in next(e for e in fresh.extensions if hasattr(e, "skills")).skills)
    ''').all_text.split("\n")
    assert carried[0] == "True True"
    assert len(eval(carried[1])) == 5  # plan mode, skills, compressor, memory, sub-agents
    assert carried[2] == "True"  # new extension objects, bound to the new runtime
    assert carried[3] == "review True"  # configured like the original's

    run(kernel, '''
        class Stamp(ark.Extension):
            name = "stamp"

        stamped = ark.AgentRuntime(ark.ScriptedModel(["x"]), session_id="stamped", extensions=[Stamp()])
    ''')
    refused = run(kernel, "%%chat stamped --new\nHello", ok=False)
    assert refused.errors and refused.errors[0][0] == "UsageError"
    assert "cannot carry the extension(s) 'stamp'" in refused.errors[0][1]
    assert "[invalid_argument]" in refused.errors[0][1]
