"""The chat's static HTML: the copy in its notebook output (nbviewer, GitHub, exports)
and ChatWidget.to_html() (issue 15 item 6)."""

import re

import IPython.display
import pytest

from arknb.domain import AgentMessage, ToolCall, ToolResult
from arknb.widgets import ChatWidget
from arknb.widgets._markdown_html import markdown_html
from arknb.widgets.chat import STATIC_LIMIT

from .conftest import call_dict, msg_dict

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
HOSTILE = ("Never trust <script>alert(1)</script> tags in model output. [x](javascript:alert(2)) "
           "![r](http://example.org/t.png) <img src=x onerror=alert(3)> **bold** END")


def run(bus, ev, text, answer, tool_result="3"):
    call = call_dict(f"c-{text}", "add", '{"a": 1, "b": 2}')
    bus.publish(ev("agent.started", input=[text]))
    bus.publish(ev("llm.before", turn=1))
    bus.publish(ev("llm.after", turn=1, message=msg_dict(AgentMessage.assistant("", tool_calls=[ToolCall(**call)]))))
    bus.publish(ev("tool.before", call=call))
    bus.publish(ev("tool.after", call=call, result=ToolResult.from_text(tool_result).model_dump(mode="json"),
                   duration_ms=2.0))
    bus.publish(ev("llm.before", turn=2))
    bus.publish(ev("llm.chunk", kind="text", text=answer, index=0))
    bus.publish(ev("llm.after", turn=2, message=msg_dict(AgentMessage.assistant(answer))))
    bus.publish(ev("agent.success", stop_reason="completed", turns=2))


@pytest.fixture
def published(monkeypatch):
    out = []
    monkeypatch.setattr(IPython.display, "display",
                        lambda data, **kw: out.append(("display", data, kw.get("display_id"))))
    monkeypatch.setattr(IPython.display, "update_display",
                        lambda data, **kw: out.append(("update", data, kw.get("display_id"))))
    return out


def assert_safe(html):
    assert "<script" not in html.lower() and "onerror=" not in html.replace("onerror=alert(3)&gt;", "")
    assert 'href="javascript' not in html and "http://example.org/t.png" not in html


def companion(chat):
    return chat._twin.bundle()["text/html"]


def test_the_output_carries_a_sanitised_copy_of_the_conversation(runtime, timers, ev, published):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    run(runtime.bus, ev, "What is 1 + 2?", HOSTILE)
    timers.advance(0.1)
    chat._ipython_display_()
    (_, view, _), (_, copy, display_id) = published  # the view, then its static companion
    assert WIDGET_VIEW in view and view[WIDGET_VIEW]["model_id"] == chat.model_id and "text/html" not in view
    assert WIDGET_VIEW not in copy and display_id
    html = copy["text/html"]
    assert f'data-arknb-static="{chat.static_id}"' in html
    assert "What is 1 + 2?" in html and "<code>add</code>" in html and "<strong>bold</strong>" in html
    # text after the literal tag is kept, shown as text
    assert "Never trust &lt;script&gt;alert(1)&lt;/script&gt; tags in model output." in html and "END" in html
    assert_safe(html)
    assert "[image: r]" in html


def test_to_html_is_a_standalone_page_with_every_entry(runtime, timers, ev):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    for n in range(STATIC_LIMIT):
        run(runtime.bus, ev, f"question {n}", f"answer {n}", tool_result="x" * 5000)
    timers.advance(0.1)
    page = chat.to_html()
    assert page.startswith("<!doctype html>") and "<style>" in page and "</html>" in page
    assert "question 0" in page and f"answer {STATIC_LIMIT - 1}" in page
    assert "x" * 5000 in page  # nothing clipped in the shared page
    copy = companion(chat)
    # the copy in the output is bounded: the newest entries, long texts clipped
    assert "question 0" not in copy and f"answer {STATIC_LIMIT - 1}" in copy
    assert "showing the newest" in copy and "more characters" in copy
    assert len(copy) < 210_000 < len(page)


def test_the_companion_is_refreshed_when_the_chat_settles_never_the_view(runtime, timers, ev, published):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    chat._ipython_display_()
    assert [p[0] for p in published] == ["display", "display"]
    display_id = published[1][2]
    run(runtime.bus, ev, "first question", "first answer")
    timers.advance(0.5)
    assert len(published) == 2  # waits until the chat has been quiet for a moment
    timers.advance(1.0)
    kind, data, again = published[-1]
    assert (kind, again) == ("update", display_id)
    assert WIDGET_VIEW not in data and "first answer" in data["text/html"]  # the live view is left alone
    for n in range(30):  # a busy stretch still refreshes now and then, never per run
        run(runtime.bus, ev, f"q{n}", f"a{n}")
        timers.advance(0.5)
    updates = [p for p in published if p[0] == "update"]
    assert 2 <= len(updates) <= 5
    chat.close()
    kind, data, _ = published[-1]
    assert kind == "update" and "a29" in data["text/html"]


def test_a_closed_chat_still_displays_its_copy(runtime, timers, ev, published):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    run(runtime.bus, ev, "q", "kept answer")
    timers.advance(0.1)
    chat.close()
    chat._ipython_display_()
    kind, data, _ = published[-1]
    assert kind == "display" and WIDGET_VIEW not in data and "kept answer" in data["text/html"]


def test_a_replay_and_a_detached_chat_say_what_they_are(runtime, timers, ev):
    chat = ChatWidget(runtime, clock=timers.clock, call_later=timers.call_later)
    runtime.bus.publish(ev("runtime.detached", reason="replaced"))
    timers.advance(0.1)
    assert "A newer chat took over this session" in companion(chat)


def test_markdown_rules_match_the_live_view():
    html = markdown_html("| a | b |\n|---|---|\n| 1 | 2 |\n\n~~gone~~ [ok](https://example.org) "
                         "[mail](mailto:a@b.c) [bad](vbscript:x) ![inline](data:image/png;base64,AAAA)")
    assert "<table>" in html and "<s>gone</s>" in html
    assert re.search(r'<a href="https://example.org" target="_blank" rel="noopener noreferrer nofollow">', html)
    assert 'href="mailto:a@b.c"' in html and "vbscript" not in html.split("[bad]")[0]
    assert '<img src="data:image/png;base64,AAAA" alt="inline">' in html


NOTEBOOK_CELLS = [
    '''import arknb as ark

@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

runtime = ark.AgentRuntime(ark.ScriptedModel([
    ark.ScriptedTurn(text="Let me add.", tool_calls=[ark.ToolCall(id="c1", name="add", arguments_json='{"a": 1, "b": 2}')]),
    ark.ScriptedTurn(text="It is **3**. Never trust <script> tags; this sentence stays."),
]), tools=[add])''',
    "chat = ark.ChatWidget(runtime)\nchat",
    'result = await runtime.run("What is 1 + 2?")\nprint(result.stop_reason)',
]


def test_an_executed_notebook_keeps_the_conversation_for_readers_without_a_kernel(tmp_path):
    """nbclient (what `build_notebooks.py --execute` and CI use) then nbconvert's HTML
    export, as nbviewer and GitHub show a notebook: the chat's output reads as the chat."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}},
                            store_widget_state=False).execute()
    assert nb.cells[2].outputs[0]["text"].strip() == "completed"
    view, copy = nb.cells[1].outputs  # the widget view, then its static companion
    assert WIDGET_VIEW in view["data"] and "text/html" not in view["data"]
    html = copy["data"]["text/html"]
    assert "What is 1 + 2?" in html and "<strong>3</strong>" in html and "this sentence stays" in html
    assert "&lt;script&gt;" in html and "<script" not in html
    exported, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    body = exported.split("<body", 1)[1]
    assert "What is 1 + 2?" in body and "this sentence stays" in body
