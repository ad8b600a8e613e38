"""MCP tools in real JupyterLab (issue 22): an MCP server's destructive tool approved from the
chat card (which names the server and the annotations), HTML/script from a server shown as
text, and a server's question (elicitation) answered through the generated form."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
KIT = str(Path(__file__).resolve().parents[1] / "tools" / "mcp" / "kit_server.py")

SETUP = f'''
import json, sys
from pathlib import Path
import arknb as ark

EFFECTS = Path("mcp_effects.log").resolve()
EFFECTS.unlink(missing_ok=True)
EFFECTS.touch()
server = ark.MCPServer.stdio(sys.executable, [{KIT!r}], env={{"ARKNB_MCP_LOG": str(EFFECTS)}}, name="kit")

def call(cid, tool_name, **arguments):
    return ark.ToolCall(id=cid, name=tool_name, arguments_json=json.dumps(arguments))

model = ark.ScriptedModel([
    ark.ScriptedTurn(text="Showing, then deleting.", tool_calls=[call("c1", "html"), call("c2", "delete_item", name="x")]),
    ark.ScriptedTurn(text="Now a question.", tool_calls=[call("c3", "ask")]),
    "All done.",
])
runtime = ark.AgentRuntime(model, tools=[server])
timeline = ark.TimelineWidget(runtime)  # listening from the start; shown in a later cell
chat = ark.ChatWidget(runtime)
chat
'''


def test_mcp_approval_html_as_text_and_an_elicitation_form(lab):
    notebook = lab.server.write_notebook("mcp_chat.ipynb", [SETUP, 'handle = runtime.start("go")',
                                                            "print(open(EFFECTS).read())",
                                                            "timeline"])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1, timeout=90)

    card = chat.get_by_test_id("arknb-approval")
    card.wait_for(timeout=60_000)
    expect(card).to_contain_text("MCP server 'kit'")
    expect(card).to_contain_text("delete_item")
    expect(card.get_by_test_id("arknb-approval-source-tool")).to_have_text(
        "MCP server kit · tool delete_item · annotations: destructiveHint: true")
    lab.screenshot("mcp_approval", locator=chat)
    card.get_by_test_id("arknb-approve").click()

    form = chat.get_by_test_id("arknb-elicitation")
    form.wait_for(timeout=60_000)
    expect(form.get_by_test_id("arknb-elicit-message")).to_have_text("Which color?")
    expect(form).to_contain_text("server kit")
    form.get_by_test_id("arknb-elicit-field-color").fill("green")
    form.get_by_test_id("arknb-elicit-field-count").fill("2")
    lab.screenshot("mcp_elicitation", locator=chat)
    form.get_by_test_id("arknb-elicit-accept").click()

    expect(chat.get_by_test_id("arknb-tool-result").filter(has_text="accepted green x2")).to_have_count(
        1, timeout=60_000)
    # The server's HTML and script are text in the chat: shown verbatim, never parsed.
    expect(chat.get_by_test_id("arknb-tool-result").filter(has_text="<script>alert('result')</script>")) \
        .to_have_count(1)
    assert chat.locator("script").count() == 0 and chat.locator("img").count() == 0
    lab.screenshot("mcp_done", locator=chat)
    assert "delete x" in lab.run_cell(2)
    # The timeline shows the same hostile text as text too.
    lab.run_cell(3)
    timeline = lab.page.locator("[data-testid='arknb-timeline'][data-ready='true']").first
    timeline.wait_for()
    timeline.get_by_test_id("arknb-timeline-filter").fill("onerror")
    row = timeline.get_by_test_id("arknb-timeline-row").filter(has_text="<img src=x onerror=alert(1)>")
    expect(row.first).to_be_visible()
    assert timeline.locator("script").count() == 0 and timeline.locator("img").count() == 0
    lab.screenshot("mcp_timeline", locator=timeline)
    lab.kernel_exec("import asyncio; asyncio.get_event_loop().create_task(runtime.aclose())")


DECLINE_CANCEL = f'''
import json, sys
from pathlib import Path
import arknb as ark

EFFECTS = Path("mcp_effects_dc.log").resolve()
EFFECTS.unlink(missing_ok=True)
EFFECTS.touch()
server = ark.MCPServer.stdio(sys.executable, [{KIT!r}], env={{"ARKNB_MCP_LOG": str(EFFECTS)}}, name="kit")
model = ark.ScriptedModel([
    ark.ScriptedTurn(text="First question.", tool_calls=[ark.ToolCall(id="d1", name="ask", arguments_json="{{}}")]),
    ark.ScriptedTurn(text="Second question.", tool_calls=[ark.ToolCall(id="d2", name="ask", arguments_json="{{}}")]),
    "Finished after both answers.",
])
runtime = ark.AgentRuntime(model, tools=[server])
chat = ark.ChatWidget(runtime)
chat
'''


def test_mcp_elicitation_declined_then_cancelled_from_the_form(lab):
    notebook = lab.server.write_notebook("mcp_decline_cancel.ipynb", [
        DECLINE_CANCEL, 'handle = runtime.start("go")', "print(open(EFFECTS).read())",
        "print(runtime.state.last_stop_reason)"])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1, timeout=90)

    form = chat.get_by_test_id("arknb-elicitation")
    form.wait_for(timeout=60_000)
    expect(form.get_by_test_id("arknb-elicit-message")).to_have_text("Which color?")
    lab.screenshot("mcp_elicitation_before_decline", locator=chat)
    form.get_by_test_id("arknb-elicit-decline").click()
    # The server got "decline" and its tool returned it; the run went on to the next question.
    expect(chat.get_by_test_id("arknb-tool-result").filter(has_text="decline")).to_have_count(1, timeout=60_000)

    expect(chat.get_by_test_id("arknb-elicitation").get_by_test_id("arknb-elicit-cancel")).to_have_count(
        1, timeout=60_000)
    lab.screenshot("mcp_elicitation_before_cancel", locator=chat)
    chat.get_by_test_id("arknb-elicitation").get_by_test_id("arknb-elicit-cancel").click()
    expect(chat.get_by_test_id("arknb-tool-result").filter(has_text="cancel")).to_have_count(1, timeout=60_000)
    expect(chat).to_contain_text("Finished after both answers.", timeout=60_000)
    lab.screenshot("mcp_elicitation_declined_cancelled", locator=chat)

    assert lab.run_cell(2).split() == ["elicit", "decline", "elicit", "cancel"]
    assert "completed" in lab.run_cell(3)  # the run went on to its end
    lab.kernel_exec("import asyncio; asyncio.get_event_loop().create_task(runtime.aclose())")
