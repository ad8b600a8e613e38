"""A graceful kernel shutdown (or restart) during a run saves the session ended or
suspended, never mid-run (issue 10 item 8, DESIGN §14 "Lifecycle").

A real ipykernel is started with jupyter_client, a cell starts a background run, and
the kernel is asked to shut down the way JupyterLab does (``shutdown_request`` on the
control channel). The test then reads what was saved.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap

import pytest

import arknb as ark

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipykernel")

from jupyter_client import KernelManager  # noqa: E402


def start_kernel(cwd) -> tuple[KernelManager, object]:
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc


def run_cell(kc, code: str) -> list[str]:
    """Execute ``code``; return its stream output; fail with the traceback on an error."""
    out: list[str] = []
    errors: list[str] = []

    def hook(msg):
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            errors.append("\n".join(content["traceback"]))

    reply = kc.execute_interactive(textwrap.dedent(code), timeout=120, output_hook=hook)
    assert reply["content"]["status"] == "ok" and not errors, "\n".join(errors)
    return out


SETUP = '''
    import asyncio, sys
    import arknb as ark
    assert sys.executable == {python!r}, sys.executable

    started = asyncio.Event()
    steps = []

    @ark.tool
    async def wait_forever(x: int) -> str:
        """Wait for ever."""
        started.set()
        await asyncio.Event().wait()

    @ark.tool
    async def step(n: int) -> str:
        """One slow step."""
        steps.append(n)
        started.set()
        await asyncio.sleep(0.05)
        return f"step {{n}} done"
'''


def finish(km, kc, how: str) -> None:
    if how == "exit":                  # exit() in a cell: the kernel stops its own loop and exits
        kc.execute("exit()")
        km.provisioner.process.wait(timeout=60)
    kc.stop_channels()
    if how == "restart":
        km.restart_kernel(now=False)   # what JupyterLab's "Restart Kernel" sends
    km.shutdown_kernel(now=how == "exit")  # shutdown_request, then wait for the process to end


@pytest.mark.parametrize("how", ["shutdown", "restart", "exit"])
async def test_a_graceful_kernel_shutdown_during_a_tool_that_never_ends_saves_the_run_cancelled(tmp_path, how):
    km, kc = start_kernel(tmp_path)
    try:
        run_cell(kc, SETUP.format(python=sys.executable))
        run_cell(kc, f'''
            model = ark.ScriptedModel([ark.ScriptedTurn(text="Waiting.", tool_calls=[
                ark.ToolCall(id="c1", name="wait_forever", arguments_json='{{"x": 1}}')]), "never"])
            runtime = ark.AgentRuntime(model, tools=[wait_forever], storage=ark.FileStateStorage({str(tmp_path)!r}),
                                       session_id="kernel")
            handle = runtime.start("go")
            await started.wait()
            from arknb.runtime import lifecycle
            assert lifecycle._installed["kernel"]() is get_ipython().kernel  # the shutdown hook is in place
        ''')
    finally:
        finish(km, kc, how)
    assert not km.is_alive()

    saved = await ark.FileStateStorage(tmp_path).load("kernel")
    assert saved.is_running is False and saved.last_stop_reason == "cancelled"
    assert saved.last_error.code == "cancelled" and "runtime closed" in saved.last_error.message
    (answer,) = [m for m in saved.history if m.role == "tool"]
    assert answer.tool_call_id == "c1" and answer.is_error


async def test_a_graceful_kernel_shutdown_between_turns_saves_the_run_suspended_and_it_resumes(tmp_path):
    km, kc = start_kernel(tmp_path)
    try:
        run_cell(kc, SETUP.format(python=sys.executable))
        run_cell(kc, f'''
            turns = [ark.ScriptedTurn(tool_calls=[ark.ToolCall(id=f"c{{n}}", name="step",
                                                               arguments_json=f'{{{{"n": {{n}}}}}}')])
                     for n in range(1, 200)] + ["all done"]
            runtime = ark.AgentRuntime(ark.ScriptedModel(turns), tools=[step], max_turns=500,
                                       storage=ark.FileStateStorage({str(tmp_path)!r}), session_id="kernel")
            handle = runtime.start("go")
            await started.wait()
        ''')
    finally:
        finish(km, kc, "shutdown")

    storage = ark.FileStateStorage(tmp_path)
    saved = await storage.load("kernel")
    assert saved.is_running is True and saved.last_stop_reason == "suspended"
    done = sum(1 for m in saved.history if m.role == "tool")
    assert 1 <= done < 199
    assert all(not m.is_error for m in saved.history if m.role == "tool")  # every step that ran finished

    ran: list[int] = []

    @ark.tool
    async def step(n: int) -> str:
        """One step."""
        ran.append(n)
        return f"step {n} done"

    rest = ark.ScriptedModel(["all done"])
    runtime = await ark.AgentRuntime.restore("kernel", storage=storage, model=rest, tools=[step])
    result = await runtime.resume()
    assert result.stop_reason == "completed" and result.text == "all done"
    assert ran == []  # nothing ran twice: the resumed run goes on with a fresh model call
    await asyncio.sleep(0)
