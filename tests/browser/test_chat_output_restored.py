"""A restored chat shows a typed answer as its field table and a cut answer with its mark, in real
JupyterLab + Chromium (issue 24): the runs happen with one runtime, the chat is opened on a NEW
runtime restored from storage, so the table and the mark come from what was saved, not from events."""

from __future__ import annotations

from .conftest import LabPage

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

CELLS = ['''
import tempfile
import arknb as ark
from pydantic import BaseModel

class Weather(BaseModel):
    city: str
    temp_c: float

folder = tempfile.mkdtemp()
first = ark.AgentRuntime(ark.ScriptedModel([
    ark.ScriptedTurn(output=Weather(city="Oslo <b>x</b>", temp_c=4.5)),
    ark.ScriptedTurn("The capital of France is the city", finish_reason="length"),
]), output_type=Weather, storage=ark.FileStateStorage(folder), session_id="saved")
await first.run("Weather in Oslo?")
await first.run("Capital of France?", output_type=str)
await first.aclose()
print("saved")
''', '''
restored = await ark.AgentRuntime.restore("saved", storage=ark.FileStateStorage(folder), model=ark.ScriptedModel([]))
chat = ark.ChatWidget(restored)
chat
''']


def test_a_restored_chat_shows_the_typed_table_and_the_cut_mark(lab: LabPage):
    notebook = lab.server.write_notebook("chat_output_restored.ipynb", CELLS)
    lab.open(notebook)
    lab.run_cell(0)
    lab.run_cell(1)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    table = chat.get_by_test_id("arknb-output")
    table.wait_for()
    rows = chat.get_by_test_id("arknb-output-row")
    assert [rows.nth(i).inner_text().split("\t") for i in range(rows.count())] == [
        ["city", "Oslo <b>x</b>"], ["temp_c", "4.5"]]
    assert "typed answer · Weather" in table.inner_text() and table.locator("b").count() == 0
    mark = chat.get_by_test_id("arknb-truncated")
    mark.wait_for()
    assert mark.inner_text() == "cut short: the answer reached max_tokens"
    cut = chat.locator("[data-testid='arknb-assistant']:has([data-testid='arknb-truncated'])")
    assert cut.get_by_test_id("arknb-assistant-text").inner_text() == "The capital of France is the city"
    lab.screenshot("restored-typed-and-cut", locator=chat)
