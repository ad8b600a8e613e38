"""Images and documents in the chat (issue 24 item 3): thumbnails live, after a restore and in
the static copies, sanitised; documents as named chips; the send box's attachments with a
size cap; a part the model refuses never reaches history and the chat goes on."""

from __future__ import annotations

import asyncio
import base64

import arknb as ark
from arknb.widgets import ChatWidget

from .chat_front import ChatFront

# A 1×1 red PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
SVG_WITH_SCRIPT = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script>'
                                   b'<circle r="4"/></svg>').decode()


async def until_idle(runtime) -> None:
    for _ in range(200):
        if not runtime.is_running:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the run did not finish")


def user_entries(chat):
    return [e for e in chat.transcript["entries"] if e["kind"] == "user"]


async def test_a_pasted_image_is_sent_as_a_part_and_shown_as_a_thumbnail():
    model = ark.ScriptedModel(["A red dot."])
    runtime = ark.AgentRuntime(model)
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    chat._on_msg(chat, {"type": "send", "text": "What is this?", "request_id": "r1",
                        "attachments": [{"name": "dot.png", "mime_type": "image/png", "data": PNG}]})
    await until_idle(runtime)
    chat._flush()
    assert front.of_type("action_result")[-1]["ok"] is True
    (sent,) = model.requests[0].messages
    assert [p.kind for p in sent.contents] == ["text", "image"] and sent.contents[1].data == PNG
    (user,) = user_entries(chat)
    assert user["text"] == "What is this?"
    assert user["parts"] == [{"kind": "image", "name": "dot.png", "mime_type": "image/png", "bytes": 70,
                              "src": f"data:image/png;base64,{PNG}"}]
    assert front.entries == chat.transcript["entries"]  # what a view shows, delta by delta
    chat.close()


async def test_an_image_alone_can_be_sent_without_words():
    model = ark.ScriptedModel(["ok"])
    runtime = ark.AgentRuntime(model)
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    chat._on_msg(chat, {"type": "send", "text": "  ", "request_id": "r1",
                        "attachments": [{"name": "dot.png", "mime_type": "image/png", "data": PNG}]})
    await until_idle(runtime)
    assert front.of_type("action_result")[-1]["ok"] is True
    assert [p.kind for p in model.requests[0].messages[0].contents] == ["image"]
    chat.close()


async def test_a_30_mb_paste_is_refused_naming_its_size_and_the_cap():
    model = ark.ScriptedModel(["never"])
    runtime = ark.AgentRuntime(model)
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    huge = base64.b64encode(b"\0" * (30 * 1024 * 1024)).decode()
    chat._on_msg(chat, {"type": "send", "text": "look", "request_id": "r1",
                        "attachments": [{"name": "huge.png", "mime_type": "image/png", "data": huge}]})
    result = front.of_type("action_result")[-1]
    assert result["ok"] is False
    assert "huge.png is 30.0 MB, over this chat's 5.0 MB cap per file; nothing was sent" in result["error"]
    assert result["error"].startswith("attachment_too_large")
    await asyncio.sleep(0)
    assert model.requests == [] and list(runtime.state.history) == [] and not runtime.is_running
    chat.close()


async def test_text_files_go_as_their_text_and_other_files_as_document_chips():
    model = ark.ScriptedModel(["read"])
    runtime = ark.AgentRuntime(model)
    chat = ChatWidget(runtime)
    notes = base64.b64encode("# Plan\nShip it.".encode()).decode()
    pdf = base64.b64encode(b"%PDF-1.4 x").decode()
    chat._on_msg(chat, {"type": "send", "text": "Compare", "request_id": "r1", "attachments": [
        {"name": "notes.md", "mime_type": "text/markdown", "data": notes},
        {"name": "report.pdf", "mime_type": "application/pdf", "data": pdf}]})
    await until_idle(runtime)
    parts = model.requests[0].messages[0].contents
    assert [(p.kind, p.name) for p in parts] == [("text", None), ("text", "notes.md"), ("document", "report.pdf")]
    assert "# Plan\nShip it." in parts[1].text
    (user,) = user_entries(chat)
    assert user["text"] == "Compare"  # the document's text is a chip, not part of the bubble
    assert user["parts"] == [
        {"kind": "document", "name": "notes.md", "as_text": True, "chars": len(parts[1].text)},
        {"kind": "document", "name": "report.pdf", "mime_type": "application/pdf", "bytes": 10}]
    html = chat.to_html()
    assert "notes.md" in html and "report.pdf" in html and "Ship it." not in html
    chat.close()


class TextOnlyModel(ark.ScriptedModel):
    """A scripted model that, like a text-only profile, refuses image parts up front."""

    def check_input(self, messages):
        for message in messages:
            if any(p.kind == "image" for p in message.contents):
                raise ark.ArkError(ark.ErrorLayer.CONFIG, "unsupported_content",
                                   "profile 'text' does not accept image input")


async def test_a_refused_image_is_answered_as_an_error_and_the_next_plain_send_works():
    model = TextOnlyModel(["Hi there."])
    runtime = ark.AgentRuntime(model)
    chat = ChatWidget(runtime)
    front = ChatFront(chat)
    chat._on_msg(chat, {"type": "send", "text": "see", "request_id": "r1",
                        "attachments": [{"name": "dot.png", "mime_type": "image/png", "data": PNG}]})
    refused = front.of_type("action_result")[-1]
    assert refused["ok"] is False and "does not accept image input" in refused["error"]
    assert chat.error == refused["error"] and list(runtime.state.history) == [] and user_entries(chat) == []
    chat._on_msg(chat, {"type": "send", "text": "hello", "request_id": "r2"})
    await until_idle(runtime)
    assert front.of_type("action_result")[-1]["ok"] is True and chat.error == ""
    assert [m.text for m in runtime.state.history] == ["hello", "Hi there."]
    chat.close()


async def test_a_restored_chat_shows_its_images(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(ark.ScriptedModel(["A dot."]), storage=storage, session_id="s")
    await first.run(["What is this?", ark.ContentPart.image_base64(PNG, "image/png")])
    again = await ark.AgentRuntime.restore("s", storage=storage, model=ark.ScriptedModel([]))
    chat = ChatWidget(again)
    front = ChatFront(chat)
    (user,) = user_entries(chat)
    assert user["parts"][0]["src"] == f"data:image/png;base64,{PNG}"
    assert front.entries == chat.transcript["entries"]
    assert f'<img class="arknb-s-thumb" src="data:image/png;base64,{PNG}"' in chat.to_html()
    assert f'src="data:image/png;base64,{PNG}"' in chat._static_html()  # the notebook's companion copy
    chat.close()


def _chat_of(*parts) -> ChatWidget:
    return ChatWidget.from_events([
        {"type": "agent.started", "run_id": "r1",
         "payload": {"input": [ark.AgentMessage.user(["look", *parts]).model_dump(mode="json")]}},
        {"type": "agent.success", "run_id": "r1", "payload": {"stop_reason": "completed"}}])


def test_an_svg_with_script_is_never_rendered_as_markup():
    chat = _chat_of(ark.ContentPart.image_base64(SVG_WITH_SCRIPT, "image/svg+xml"))
    (user,) = user_entries(chat)
    (part,) = user["parts"]
    assert "src" not in part and "never drawn" in part["blocked"]
    for html in (chat.to_html(), chat._static_html()):
        assert "<svg" not in html and "image/svg" not in html and "alert(1)" not in html
        assert SVG_WITH_SCRIPT not in html and "never drawn in the chat" in html


def test_a_remote_image_url_is_never_fetched_by_the_page():
    chat = _chat_of(ark.ContentPart.image_url("https://tracker.example/pixel.png"))
    (part,) = user_entries(chat)[0]["parts"]
    assert "src" not in part and part["blocked"].startswith("remote image not loaded")
    html = chat.to_html()
    assert 'src="https://' not in html and "<img" not in html.split("<body>")[1]


def test_a_forged_entry_src_is_checked_again_when_rendered():
    from arknb.widgets._chat_media import parts_html

    forged = [{"kind": "image", "src": "javascript:alert(1)"},
              {"kind": "image", "src": "data:image/svg+xml;base64," + SVG_WITH_SCRIPT},
              {"kind": "image", "src": 'data:image/png;base64,AAAA" onerror="alert(1)'}]
    html = parts_html(forged, embed_limit=None)
    assert "<img" not in html and "javascript:" not in html and "onerror" not in html.replace("&quot;", '"').split(
        "[image")[0]


def test_the_companion_copy_leaves_out_a_large_image_that_to_html_keeps():
    big = base64.b64encode(b"\x89PNG" + b"\0" * 600_000).decode()
    chat = _chat_of(ark.ContentPart.image_base64(big, "image/png"))
    assert big not in chat._static_html() and "too large for this copy" in chat._static_html()
    assert big in chat.to_html()


def test_a_document_sent_as_text_is_a_chip(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("secret plans", encoding="utf-8")
    chat = _chat_of(ark.ContentPart.from_document_text(notes))
    (user,) = user_entries(chat)
    assert user["text"] == "look" and user["parts"][0]["name"] == "notes.md" and user["parts"][0]["as_text"]
    assert "secret plans" not in chat.to_html() and "notes.md" in chat.to_html()
