"""%%chat in real JupyterLab (DESIGN §18): the answer streams into the cell as a chat of
that exchange, and an approval card there is answered by a click."""

from __future__ import annotations

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

SETUP = '''
import arknb as ark

@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    """Delete a cache folder."""
    return f"cleared {path}"

model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Hello ", "from the agent."]),
    ark.ScriptedTurn(text="I will clear it.", tool_calls=[
        ark.ToolCall(id="c1", name="clear_cache", arguments_json='{"path": "/tmp/cache"}')]),
    ark.ScriptedTurn(text="The cache is cleared."),
])
agent = ark.AgentRuntime(model, tools=[clear_cache], session_id="magic-demo")
'''


def test_chat_magic_streams_the_answer_and_its_approval_card_works(lab):
    notebook = lab.server.write_notebook("magics_chat.ipynb", [
        SETUP, "%load_ext arknb", "%%chat\nSay hello", "%%chat agent\nClear the cache", "%arknb"])
    lab.open(notebook)
    lab.run_cells(range(0, 3))
    first = lab.cell_locator(2).locator(CHAT)
    first.locator("[data-testid='arknb-assistant-text']", has_text="Hello from the agent.").wait_for()

    lab.run_cell(3)
    chat = lab.cell_locator(3).locator(CHAT)
    card = chat.locator("[data-testid='arknb-approval']")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("clear_cache")
    expect(card).to_contain_text("/tmp/cache")
    # a slice: this cell's chat shows its own exchange, not the first one's
    expect(chat.locator("[data-testid='arknb-assistant-text']", has_text="Hello from the agent.")).to_have_count(0)
    lab.screenshot("chat_magic_approval_card", locator=lab.cell_locator(3))

    card.get_by_test_id("arknb-approve").click()
    chat.locator("[data-testid='arknb-assistant-text']", has_text="The cache is cleared.").wait_for()
    expect(chat.locator("[data-testid='arknb-tool-card'][data-status='done']")).to_have_count(1)
    lab.screenshot("chat_magic_done", locator=lab.cell_locator(3))
    assert lab.kernel_exec("print(agent.last_result.stop_reason)").strip() == "completed"

    table = lab.run_cell(4)
    assert "magic-demo" in table and "completed" in table and "approval_policy" in table
    lab.screenshot("arknb_table", locator=lab.cell_locator(4))
