"""A typed answer's field table and a cut answer's mark in real JupyterLab + Chromium
(issue 24 items 1 and 2): the run goes through a live kernel, the chat shows the table
(the raw JSON hidden), a refused try is said, and an answer cut at max_tokens is marked."""

from __future__ import annotations

from .conftest import LabPage

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

CELLS = ['''
import arknb as ark
from pydantic import BaseModel

class Weather(BaseModel):
    city: str
    temp_c: float
    sunny: bool

model = ark.ScriptedModel([
    '{"city": "Oslo", "temp_c": "cold", "sunny": false}',
    ark.ScriptedTurn(output=Weather(city="Oslo <script>alert(1)</script>", temp_c=4.5, sunny=False)),
    ark.ScriptedTurn("The capital of France is the city", finish_reason="length"),
])
runtime = ark.AgentRuntime(model, output_type=Weather)
chat = ark.ChatWidget(runtime)
chat
''', '''
result = await runtime.run("Weather in Oslo?")
print(result.stop_reason, result.output.temp_c)
''', '''
cut = await runtime.run("Capital of France?", output_type=str)
print(cut.stop_reason, cut.truncated)
''']


def test_a_typed_answer_shows_as_a_table_and_a_cut_answer_is_marked(lab: LabPage):
    notebook = lab.server.write_notebook("chat_output.ipynb", CELLS)
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()

    lab.run_cell(1)
    table = chat.get_by_test_id("arknb-output")
    table.wait_for()
    rows = chat.get_by_test_id("arknb-output-row")
    assert [rows.nth(i).inner_text().split("\t") for i in range(rows.count())] == [
        ["city", "Oslo <script>alert(1)</script>"], ["temp_c", "4.5"], ["sunny", "false"]]
    assert "typed answer · Weather" in table.inner_text()
    assert table.locator("script").count() == 0  # the value is text, never markup
    # the typed answer's raw JSON is not shown twice; the refused try is said
    answer = chat.locator("[data-testid='arknb-assistant']:has([data-testid='arknb-output'])")
    assert answer.count() == 1 and answer.get_by_test_id("arknb-assistant-text").count() == 1
    assert answer.get_by_test_id("arknb-assistant-text").is_hidden()
    notice = chat.get_by_test_id("arknb-notice").filter(has_text="not a valid Weather")
    assert "temp_c" in notice.inner_text() and "asked the model again" in notice.inner_text()
    lab.screenshot("typed-answer", locator=chat)

    lab.run_cell(2)
    mark = chat.get_by_test_id("arknb-truncated")
    mark.wait_for()
    assert mark.inner_text() == "cut short: the answer reached max_tokens"
    cut = chat.locator("[data-testid='arknb-assistant']:has([data-testid='arknb-truncated'])")
    assert cut.count() == 1
    text = cut.get_by_test_id("arknb-assistant-text")
    assert text.is_visible() and text.inner_text() == "The capital of France is the city"
    assert cut.get_by_test_id("arknb-output").count() == 0  # output_type=str: the answer is its text
    lab.screenshot("cut-answer", locator=chat)
