"""A restored session's timeline in real JupyterLab + Chromium (DESIGN §13): another
process ran two runs on a SQLite store and exited; the notebook's kernel restores the
session and opens ``TimelineWidget(runtime)``. The earlier runs' rows are drawn at once
(no "load" click), nothing older is offered, and the next run's rows follow them live,
each event once and in order. Screenshots go to test-results/."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_timeline_story import ROWS, TIMELINE, shoot, tall

EARLIER = """
import subprocess, sys, tempfile
from pathlib import Path
import arknb as ark

folder = Path(tempfile.mkdtemp(prefix="arknb-restored-timeline-"))
EARLIER = '''
import asyncio, sys
import arknb as ark

@ark.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

async def main():
    store = ark.SQLiteStore(sys.argv[1])
    model = ark.ScriptedModel([
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
        "It is 3.",
        ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c2", name="add", arguments_json='{"a": 3, "b": 4}')]),
        "It is 7.",
    ])
    runtime = ark.AgentRuntime(model, tools=[add], storage=store, session_id="restored")
    for question in ("What is 1 + 2?", "And 3 + 4?"):
        print((await runtime.run(question)).stop_reason)
    await runtime.aclose()
    await store.aclose()

asyncio.run(main())
'''
done = subprocess.run([sys.executable, "-c", EARLIER, str(folder / "arknb.sqlite3")], capture_output=True, text=True)
print(done.returncode, done.stdout.split(), done.stderr[-2000:])
"""

RESTORE = """
store = ark.SQLiteStore(folder / "arknb.sqlite3")
runtime = await ark.AgentRuntime.restore("restored", storage=store, model=ark.ScriptedModel(["It is 42."]))
print("in the outbox:", len(await store.read_events("restored")))
"""

TIMELINE_CELL = """
timeline = ark.TimelineWidget(runtime)
timeline
"""

NEXT_RUN = """
print((await runtime.run("And the answer?")).stop_reason)
"""


def _sequences(timeline):
    """The drawn rows' sequence numbers in row order (the virtual list reuses its nodes)."""
    rows = timeline.locator(ROWS).evaluate_all(
        "(rs) => rs.map((r) => [Number(r.dataset.index), Number(r.dataset.sequence)])")
    return [sequence for _, sequence in sorted(rows)]


def test_a_restored_sessions_timeline_shows_the_earlier_runs_without_a_click(lab):
    notebook = lab.server.write_notebook("timeline_restored.ipynb", [EARLIER, RESTORE, TIMELINE_CELL, NEXT_RUN])
    lab.open(notebook)
    out = lab.run_cell(0, timeout=120)
    assert out.startswith("0 ['completed', 'completed']"), out
    stored = int(lab.run_cell(1).split(":")[1])
    assert stored > 10

    lab.run_cell(2)
    timeline = lab.page.locator(TIMELINE).first
    timeline.wait_for()
    # The earlier runs are drawn without any click; nothing older is offered.
    timeline.locator(f"{ROWS}[data-type='agent.success']").nth(1).wait_for()
    expect(timeline.get_by_test_id("arknb-timeline-older")).to_have_count(0)
    expect(timeline.get_by_test_id("arknb-timeline-count")).to_have_text(f"{stored} of {stored} events")
    expect(timeline.get_by_test_id("arknb-timeline-totals")).to_contain_text("2 runs · 4 turns · 2 tool calls")
    tall(lab, timeline, stored)
    earlier = _sequences(timeline)
    assert earlier == sorted(earlier) and len(earlier) == stored
    assert timeline.locator(f"{ROWS}[data-type='tool.after']").count() == 2
    assert lab.kernel_exec("print(len(timeline.events), timeline.forgotten)").split() == [str(stored), "0"]
    shoot(lab, "restored_timeline", timeline)

    # The next run streams in after them: each event once, in order.
    assert lab.run_cell(3).strip() == "completed"
    total = int(lab.kernel_exec("print(len(timeline.events))").strip())
    expect(timeline.get_by_test_id("arknb-timeline-count")).to_have_text(f"{total} of {total} events")
    tall(lab, timeline, total)
    shown = _sequences(timeline)
    assert shown[:stored] == earlier and shown == sorted(shown) and len(set(shown)) == len(shown) == total
    expect(timeline.get_by_test_id("arknb-timeline-totals")).to_contain_text("3 runs · 5 turns · 2 tool calls")
    rows = timeline.get_by_test_id("arknb-timeline-rows")
    rows.evaluate("(el) => { el.style.height = ''; el.style.maxHeight = ''; el.scrollTop = el.scrollHeight; "
                  "el.dispatchEvent(new Event('scroll')); }")
    timeline.locator(f"{ROWS}[data-type='agent.success']").nth(2).wait_for()  # the bottom: the live run's end
    lab.screenshot("restored_timeline_next_run", locator=timeline)
    lab.kernel_exec("import shutil\nawait runtime.aclose()\nawait store.aclose()\n"
                    "shutil.rmtree(folder, ignore_errors=True)")
