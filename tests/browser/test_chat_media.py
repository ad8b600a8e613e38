"""Images in the chat in real JupyterLab + Chromium (issue 24 item 3): a pasted image goes to
the kernel as a part and comes back as a thumbnail; a 30 MB paste is refused with its size and
the cap; a restored session's chat shows its image."""

from __future__ import annotations

from .conftest import LabPage

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
# A 16×16 PNG, red fading to blue (made in the page, pasted as a File).
PNG_B64 = ("iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAQklEQVR4nGP4b8Pw3ob/vo38eRv9/Tb2623859vE99vk19vU59v0x9vM97dZb2+zX9/mvLzNfX6b9wyjGkY1DF8NABkXOiB5tEEcAAAAAElFTkSuQmCC")

CELLS = ['''
import asyncio, base64, tempfile
import arknb as ark
runtime = ark.AgentRuntime(ark.ScriptedModel(["A small gradient square.", "Still here."]))
chat = ark.ChatWidget(runtime)
chat
''', '''
folder = tempfile.mkdtemp()
storage = ark.FileStateStorage(folder)
first = ark.AgentRuntime(ark.ScriptedModel(["A dot."]), storage=storage, session_id="pics")
await first.run(["What is this?", ark.ContentPart.image_base64("%s", "image/png")])
restored = await ark.AgentRuntime.restore("pics", storage=storage, model=ark.ScriptedModel([]))
ark.ChatWidget(restored)
''' % PNG_B64]

PASTE = """([b64, size, name]) => {
  let bytes;
  if (b64) { const bin = atob(b64); bytes = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); }
  else bytes = new Uint8Array(size);
  const dt = new DataTransfer();
  dt.items.add(new File([bytes], name, { type: "image/png" }));
  const box = document.querySelectorAll("[data-testid='arknb-input']")[0];
  box.focus();
  box.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
}"""


def test_a_pasted_image_becomes_a_thumbnail_and_a_restored_chat_shows_its_image(lab: LabPage):
    notebook = lab.server.write_notebook("chat_media.ipynb", CELLS)
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()

    # 30 MB: refused in the browser with its size and the cap; nothing attached, nothing sent.
    lab.page.evaluate(PASTE, [None, 30 * 1024 * 1024, "huge.png"])
    error = chat.get_by_test_id("arknb-attach-error")
    error.wait_for()
    assert error.inner_text() == "huge.png is 30.0 MB, over this chat's 5.0 MB cap per file; it was not attached"
    assert chat.get_by_test_id("arknb-attachment").count() == 0

    lab.page.evaluate(PASTE, [PNG_B64, 0, "gradient.png"])
    chat.get_by_test_id("arknb-attachment").wait_for()
    box = chat.get_by_test_id("arknb-input")
    box.fill("What is in this picture?")
    box.press("Enter")
    chat.locator("[data-testid='arknb-assistant-text']", has_text="A small gradient square.").wait_for()
    thumb = chat.locator("[data-testid='arknb-user'] [data-testid='arknb-thumb']")
    assert thumb.get_attribute("src") == f"data:image/png;base64,{PNG_B64}"
    assert thumb.evaluate("(img) => img.complete && img.naturalWidth") == 16  # decoded: a real image
    assert chat.get_by_test_id("arknb-attachment").count() == 0  # the tray empties once accepted
    kinds = lab.kernel_exec("print([(p.kind.value, p.name) for p in runtime.state.history[0].contents])")
    assert kinds.strip() == "[('text', None), ('image', 'gradient.png')]"
    lab.screenshot("pasted-image", locator=chat)

    lab.run_cell(1)
    restored = lab.page.locator(CHAT).nth(1)
    restored.wait_for()
    thumb = restored.locator("[data-testid='arknb-user'] [data-testid='arknb-thumb']")
    thumb.wait_for()
    assert thumb.get_attribute("src") == f"data:image/png;base64,{PNG_B64}"
    lab.screenshot("restored-image", locator=restored)
