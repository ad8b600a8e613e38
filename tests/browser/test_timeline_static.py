"""A saved notebook reads well without a kernel: the TimelineWidget's output carries a
static HTML summary kept current while it runs (hidden while the live view shows),
which nbconvert (nbviewer) renders and JupyterLab shows after a reopen without the
widget's kernel, instead of "model not found"."""

from __future__ import annotations

import nbformat
from nbconvert import HTMLExporter

TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"
STATIC = "[data-arknb-static]"

CELLS = [
    """
import arknb as ark


@ark.tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Let me ", "<b>add</b>."],
                     tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text=["It ", "is ", "3."]),
])
runtime = ark.AgentRuntime(model, tools=[add])
timeline = ark.TimelineWidget(runtime)
timeline
""",
    "result = await runtime.run('What is 1 + 2?')\nprint(result.stop_reason)",
]

_JS_SAVE = """async () => {
  const app = window.jupyterapp; const panel = app.shell.currentWidget;
  await app.commands.execute('docmanager:save');
  return !panel.context.model.dirty;
}"""


def test_a_saved_notebook_shows_the_timeline_summary_without_a_kernel(lab):
    path = lab.server.write_notebook("timeline_static.ipynb", CELLS)
    lab.open(path)
    lab.run_cell(0)
    timeline = lab.page.locator(TIMELINE).first
    timeline.wait_for()
    assert lab.run_cell(1).strip() == "completed"
    # The companion is refreshed about a second after the last change; live, it is hidden.
    lab.page.wait_for_function(
        f"() => {{ const s = document.querySelector('{STATIC}'); return s && s.textContent.includes('agent.success'); }}",
        timeout=30_000)
    companion = lab.page.locator(STATIC).first
    assert not companion.is_visible()
    assert timeline.is_visible()

    assert lab.page.evaluate(_JS_SAVE) is True
    saved = nbformat.read(lab.server.root_dir / path, as_version=4)
    outputs = saved.cells[0].outputs
    kinds = [sorted(o.get("data", {})) for o in outputs]
    # The view's output carries no text/plain: where it cannot render, no "<... object at 0x…>" line.
    assert ["application/vnd.jupyter.widget-view+json"] in kinds
    html = next(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "agent.success" in html and "1 tool calls" in html and "add c1" in html
    assert "&lt;b&gt;add&lt;/b&gt;" in html and "<b>add</b>" not in html  # model text stays text

    # nbviewer renders notebooks with nbconvert: the summary shows, no widget error.
    page, _ = HTMLExporter().from_notebook_node(saved)
    assert "Static summary of an arknb TimelineWidget" in page and "add c1" in page
    assert "model not found" not in page
    assert "object at 0x" not in page

    # Reopened without the widget's kernel (a new kernel has no such model).
    lab.server.shutdown_all_sessions()
    lab.open(path)
    companion = lab.page.locator(STATIC).first
    companion.wait_for(state="visible", timeout=60_000)
    assert "agent.success" in companion.inner_text()
    lab.page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].some((o) =>"
        " o.textContent.includes('model not found'))", timeout=60_000)
    shown_errors = lab.page.evaluate(
        "() => [...document.querySelectorAll('.jp-OutputArea-output')].filter((o) =>"
        " o.textContent.includes('model not found') && o.offsetParent !== null).length")
    assert shown_errors == 0  # the companion hides JupyterLab's "model not found" line
    assert lab.page.locator(TIMELINE).count() == 0
    lab.screenshot("reopened_without_kernel", locator=lab.cell_locator(0))
