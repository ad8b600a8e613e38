"""The chat front end's media (issue 24 item 3) with a fake model: thumbnails only from inline
raster data, never a remote or SVG image; documents as chips; pasted and dropped files become
attachments of the send action, under the size cap (a 30 MB paste is refused, naming both)."""

from .test_chat_front import DANGER, base_state

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
CAP = 5 * 1024 * 1024


def user(parts, text="look", eid="e1"):
    return {"id": eid, "kind": "user", "text": text, "parts": parts}


# Builds a File of `size` bytes (a PNG header first when it is an image) in the page.
MAKE_FILE = """([name, type, size, b64]) => {
  let bytes;
  if (b64) { const bin = atob(b64); bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); }
  else bytes = new Uint8Array(size);
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], name, { type }));
  return dt;
}"""


def paste(harness, name, mime, size=0, b64=None):
    harness.page.evaluate(f"""(args) => {{
      const dt = ({MAKE_FILE})(args);
      const box = document.querySelector("[data-testid='arknb-input']");
      box.dispatchEvent(new ClipboardEvent("paste", {{ clipboardData: dt, bubbles: true, cancelable: true }}));
    }}""", [name, mime, size, b64])


def drop(harness, name, mime, size=0, b64=None):
    harness.page.evaluate(f"""(args) => {{
      const dt = ({MAKE_FILE})(args);
      const box = document.querySelector("[data-testid='arknb-input']").closest(".arknb-composer-wrap");
      box.dispatchEvent(new DragEvent("dragover", {{ dataTransfer: dt, bubbles: true, cancelable: true }}));
      box.dispatchEvent(new DragEvent("drop", {{ dataTransfer: dt, bubbles: true, cancelable: true }}));
    }}""", [name, mime, size, b64])


def sends(harness):
    return [m for m in harness.sent() if m["type"] == "send"]


def test_thumbnails_only_from_inline_raster_data_and_documents_as_chips(harness):
    svg = "PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciPjxzY3JpcHQ+d2luZG93Ll9feHNzPTE8L3NjcmlwdD48L3N2Zz4="
    harness.mount("chat", base_state(entries=[user([
        {"kind": "image", "name": "dot.png", "mime_type": "image/png", "bytes": 70, "src": f"data:image/png;base64,{PNG}"},
        {"kind": "image", "name": "x.svg", "mime_type": "image/svg+xml", "blocked": "an SVG image is never drawn"},
        # A forged entry: the front end checks src itself, it never takes it on trust.
        {"kind": "image", "name": "forged", "src": f"data:image/svg+xml;base64,{svg}"},
        {"kind": "image", "name": "remote", "src": "https://tracker.example/pixel.png"},
        {"kind": "image", "name": "js", "src": "javascript:window.__xss=1"},
        {"kind": "document", "name": "report.pdf", "mime_type": "application/pdf", "bytes": 2048},
        {"kind": "document", "name": "notes.md", "as_text": True, "chars": 1234},
    ])]))
    page = harness.page
    thumbs = page.get_by_test_id("arknb-thumb")
    assert thumbs.count() == 1 and thumbs.get_attribute("src") == f"data:image/png;base64,{PNG}"
    blocked = page.get_by_test_id("arknb-image-blocked")
    assert blocked.count() == 4 and "never drawn" in blocked.nth(0).inner_text()
    chips = page.get_by_test_id("arknb-doc-chip")
    assert chips.all_text_contents() == ["report.pdf (application/pdf · 2.0 KB)", "notes.md (text, 1,234 characters)"]
    assert page.evaluate(DANGER, page.query_selector("[data-testid='arknb-chat']")) == []
    assert page.evaluate("() => document.querySelector(\"[data-testid='arknb-chat']\").querySelectorAll('svg, script').length") == 0
    assert page.evaluate("() => window.__xss") is None and harness.foreign_requests == []
    thumbs.click()  # a click enlarges it
    assert thumbs.get_attribute("aria-expanded") == "true"


def test_a_pasted_image_is_sent_with_the_message_and_the_tray_empties_when_accepted(harness):
    harness.mount("chat", base_state(max_attachment_bytes=CAP))
    paste(harness, "image.png", "image/png", b64=PNG)
    page = harness.page
    page.get_by_test_id("arknb-attachment").wait_for()
    assert page.get_by_test_id("arknb-attachment").inner_text().startswith("image.png")
    box = page.get_by_test_id("arknb-input")
    box.fill("what is it?")
    box.press("Enter")
    (msg,) = sends(harness)
    assert msg["text"] == "what is it?"
    assert msg["attachments"] == [{"name": "image.png", "mime_type": "image/png", "data": PNG}]
    harness.emit({"type": "action_result", "action": "send", "request_id": msg["request_id"], "ok": True, "error": None})
    assert page.get_by_test_id("arknb-attachment").count() == 0 and box.input_value() == ""


def test_a_30_mb_paste_is_refused_with_its_size_and_the_cap(harness):
    harness.mount("chat", base_state(max_attachment_bytes=CAP))
    paste(harness, "huge.png", "image/png", size=30 * 1024 * 1024)
    error = harness.page.get_by_test_id("arknb-attach-error")
    error.wait_for()
    assert error.inner_text() == "huge.png is 30.0 MB, over this chat's 5.0 MB cap per file; it was not attached"
    assert harness.page.get_by_test_id("arknb-attachment").count() == 0
    harness.page.get_by_test_id("arknb-input").press("Enter")
    harness.frames()
    assert sends(harness) == []  # nothing attached, no text: nothing is sent


def test_a_dropped_file_alone_can_be_sent_and_a_refusal_keeps_it(harness):
    harness.mount("chat", base_state(max_attachment_bytes=CAP))
    drop(harness, "report.pdf", "application/pdf", size=2048)
    page = harness.page
    page.get_by_test_id("arknb-attachment").wait_for()
    page.get_by_test_id("arknb-send").click()
    (msg,) = sends(harness)
    assert msg["text"] == "" and [(a["name"], a["mime_type"]) for a in msg["attachments"]] == [
        ("report.pdf", "application/pdf")]
    harness.emit({"type": "action_result", "action": "send", "request_id": msg["request_id"], "ok": False,
                  "error": "unsupported_content: the document part 'report.pdf' cannot be sent"})
    assert page.get_by_test_id("arknb-attachment").count() == 1  # kept, to remove or resend
    page.get_by_test_id("arknb-attach-remove").click()
    assert page.get_by_test_id("arknb-attachment").count() == 0


def test_plain_text_paste_is_untouched(harness):
    harness.mount("chat", base_state(max_attachment_bytes=CAP))
    box = harness.page.get_by_test_id("arknb-input")
    box.focus()
    harness.page.evaluate("""() => {
      const dt = new DataTransfer(); dt.setData("text/plain", "hello");
      const ev = new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true });
      document.querySelector("[data-testid='arknb-input']").dispatchEvent(ev);
      window.__prevented = ev.defaultPrevented;
    }""")
    assert harness.page.evaluate("() => window.__prevented") is False
    assert harness.page.get_by_test_id("arknb-attachment").count() == 0
