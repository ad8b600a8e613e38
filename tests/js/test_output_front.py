"""The chat's typed answer (a field table) and cut answer (a mark) with a fake model (DESIGN §17)."""

from .test_chat_front import DANGER, assistant, base_state

ROWS = """() => [...document.querySelectorAll("[data-testid='arknb-output-row']")].map(
  (tr) => [tr.querySelector('th').textContent, tr.querySelector('td').textContent])"""


def test_a_typed_answer_shows_as_a_field_table_with_its_raw_json_hidden(harness):
    typed = assistant(text='{"city": "Oslo", "temp_c": 4.5, "tags": ["cold"]}')
    typed["output"] = {"name": "Weather", "value": {"city": "Oslo", "temp_c": 4.5, "tags": ["cold"]}}
    harness.mount("chat", base_state([assistant("e1", text="plain answer"), typed]))
    table = harness.page.locator("[data-testid='arknb-output']")
    assert table.count() == 1 and table.is_visible()
    assert harness.page.evaluate(ROWS) == [["city", "Oslo"], ["temp_c", "4.5"], ["tags", '["cold"]']]
    assert "typed answer · Weather" in table.text_content()
    texts = harness.page.locator("[data-testid='arknb-assistant-text']")
    assert texts.nth(0).is_visible() and texts.nth(1).is_hidden()  # the plain answer stays text


def test_a_typed_answer_without_text_still_shows_and_a_list_gets_a_row_per_item(harness):
    typed = assistant(text="")  # tool mode: the answer came as final_result arguments
    typed["output"] = {"name": "list", "value": [3, 1]}
    harness.mount("chat", base_state([typed]))
    assert harness.page.locator("[data-testid='arknb-assistant']").is_visible()
    assert harness.page.evaluate(ROWS) == [["0", "3"], ["1", "1"]]


def test_a_typed_answer_value_is_text_never_markup(harness):
    hostile = assistant(text="{}")
    hostile["output"] = {"name": "<b>X</b>", "value": {"<img src=x onerror=\"window.__xss=1\">":
                                                      "<script>window.__xss=2</script>"}}
    harness.mount("chat", base_state([hostile]))
    root = harness.page.locator("[data-testid='arknb-output']")
    assert "<script>window.__xss=2</script>" in root.text_content()
    assert harness.page.evaluate(DANGER, root.element_handle()) == []
    assert harness.page.evaluate("() => window.__xss") is None


def test_a_cut_answer_is_marked_and_the_mark_follows_a_patch(harness):
    harness.mount("chat", base_state([assistant(text="The capital of France is the city of")]))
    mark = harness.page.locator("[data-testid='arknb-truncated']")
    assert mark.count() == 0
    harness.set("_snapshot", {"seq": 2, "n": 1, "status": "completed", "entries": [
        {**assistant(text="The capital of France is the city of"), "truncated": True}]})
    mark.wait_for()
    assert "max_tokens" in mark.text_content()
    assert harness.page.locator("[data-testid='arknb-assistant-text']").is_visible()  # the cut text stays shown
