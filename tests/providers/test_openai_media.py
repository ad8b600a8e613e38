"""Images and documents on the wire, refused parts, and documents sent as text (DESIGN §17)."""

from __future__ import annotations

import base64
import os
import sys

import pytest

import arknb as ark
from arknb.domain import AgentMessage, ArkError, ContentPart, ModelRequest
from arknb.providers.openai_compat import OpenAICompatibleClient, deepseek, local, openai
from openai_sse_server import Reply, chunk, sse

PDF_BYTES = base64.b64encode(b"%PDF-1.4 pretend").decode()


def ok(text: str = "ok") -> Reply:
    return Reply([sse(chunk(text), chunk(finish="stop"),
                      chunk(usage={"prompt_tokens": 3, "completion_tokens": 1}, choices=False))])


async def test_document_goes_as_an_openai_file_part(server, make_client):
    server.script(ok())
    part = ContentPart.document(data=PDF_BYTES, mime_type="application/pdf", name="report.pdf")
    await make_client(openai(server.base_url)).generate(
        ModelRequest(messages=(AgentMessage.user(["Summarise: ", part]),)))
    assert server.requests[0].body["messages"][0]["content"] == [
        {"type": "text", "text": "Summarise: "},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF_BYTES}"}}]


async def test_unnamed_document_gets_a_filename_from_its_type(server, make_client):
    server.script(ok())
    part = ContentPart.document(data=PDF_BYTES, mime_type="application/pdf")
    await make_client(local(server.base_url, files=True)).generate(ModelRequest(messages=(AgentMessage.user([part]),)))
    assert server.requests[0].body["messages"][0]["content"][0]["file"]["filename"] == "document.pdf"


async def test_document_refused_before_any_request_naming_the_way_forward(server, make_client):
    client = make_client(deepseek().replace(base_url=server.base_url))
    part = ContentPart.document(data=PDF_BYTES, mime_type="application/pdf", name="report.pdf")
    with pytest.raises(ArkError) as info:
        await client.generate(ModelRequest(messages=(AgentMessage.user(["Read", part]),)))
    error = info.value
    assert (error.layer, error.code) == ("config", "unsupported_content")
    assert "'report.pdf'" in error.message and "'deepseek'" in error.message
    assert "profiles.openai()" in error.message and "local(files=True)" in error.message
    assert "ContentPart.from_document_text(path)" in error.message
    assert server.requests == []


async def test_document_by_url_refused_even_where_files_are_taken(server, make_client):
    client = make_client(openai(server.base_url))
    part = ContentPart.document(url="https://example.org/r.pdf", name="r.pdf")
    with pytest.raises(ArkError, match="bytes, not a URL") as info:
        await client.generate(ModelRequest(messages=(AgentMessage.user([part]),)))
    assert info.value.code == "unsupported_content" and server.requests == []


def test_image_refusal_names_the_profiles_that_take_images():
    client = OpenAICompatibleClient(deepseek(), api_key="sk-test-key-1234", model="deepseek-chat")
    with pytest.raises(ArkError) as info:
        client.check_input([AgentMessage.user(["see", ContentPart.image_base64("AAAA", "image/png")])])
    assert info.value.code == "unsupported_content"
    assert "does not accept image input" in info.value.message and "profiles.openai()" in info.value.message
    # Text-only messages and non-user messages pass.
    client.check_input([AgentMessage.user("plain"), AgentMessage.assistant("fine")])


async def test_a_refused_image_never_enters_history_and_the_next_plain_run_works(server):
    """The reproducer: a text-only profile refuses an image; the session stays usable."""
    server.script(ok("Hello back."))
    async with OpenAICompatibleClient(deepseek().replace(base_url=server.base_url), api_key="sk-test-key-1234",
                                      model="deepseek-chat") as model:
        runtime = ark.AgentRuntime(model)
        seen = []
        runtime.bus.subscribe("*", lambda event: seen.append(event.type))
        with pytest.raises(ArkError) as info:
            await runtime.run(["What is in this picture?", ContentPart.image_base64("AAAA", "image/png")])
        assert info.value.code == "unsupported_content"
        assert list(runtime.state.history) == []
        assert server.requests == [] and ark.EventTypes.AGENT_STARTED not in seen

        result = await runtime.run("Hello")
    assert result.stop_reason == "completed", result.error
    assert result.final_message.text == "Hello back."
    assert server.requests[0].body["messages"] == [{"role": "user", "content": "Hello"}]
    assert [m.text for m in runtime.state.history] == ["Hello", "Hello back."]


def test_from_document_text_reads_markdown_and_text_as_is(tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Title\n\nSome *text*.\n", encoding="utf-8")
    part = ContentPart.from_document_text(notes)
    assert part.is_text and part.is_document_text and part.name == "notes.md"
    assert part.text == '\n<document name="notes.md">\n# Title\n\nSome *text*.\n\n</document>\n'
    plain = tmp_path / "a.txt"
    plain.write_text("hello", encoding="utf-8")
    assert "hello" in ContentPart.from_document_text(plain, name="greeting").text
    assert ContentPart.from_document_text(plain, name="greeting").name == "greeting"


def _pdf_with_text(text: str) -> bytes:
    """A minimal one-page PDF whose page shows ``text`` (built by hand: no writer needed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_from_document_text_extracts_a_pdf_with_pypdf(tmp_path):
    if os.environ.get("CI") != "true":  # CI installs the extra (make test): there it must run
        pytest.importorskip("pypdf")
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(_pdf_with_text("Quarterly revenue grew"))
    part = ContentPart.from_document_text(pdf)
    assert part.name == "report.pdf" and "Quarterly revenue grew" in part.text


def test_from_document_text_without_pypdf_names_the_extra(tmp_path, monkeypatch):
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(_pdf_with_text("x"))
    monkeypatch.setitem(sys.modules, "pypdf", None)
    with pytest.raises(ArkError) as info:
        ContentPart.from_document_text(pdf)
    assert info.value.code == "pdf_unavailable" and "arknb[pdf]" in info.value.message


@pytest.mark.parametrize(("name", "content", "why"), [
    ("missing.md", None, "no such file"),
    ("image.png", b"\x89PNG", ".png is not a PDF, Markdown or text file"),
    ("latin.txt", "caf\xe9".encode("latin-1"), "not UTF-8 text"),
    ("broken.pdf", b"%PDF-1.4 not really", "not a readable PDF"),
])
def test_from_document_text_refuses_what_it_cannot_read(tmp_path, name, content, why):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ArkError) as info:
        ContentPart.from_document_text(path)
    assert info.value.code == "document_unreadable" and why in info.value.message and name in info.value.message


async def test_an_image_a_before_run_hook_adds_is_refused_too_and_never_enters_history(server):
    from arknb.hooks import BeforeRunHookResult, HookRegistry

    hooks = HookRegistry()

    @hooks.before_run
    def attach_screenshot(ctx):
        (message,) = ctx.input
        if "screenshot" not in message.text:
            return None
        return BeforeRunHookResult.proceed([AgentMessage.user([*message.contents,
                                                               ContentPart.image_base64("AAAA", "image/png")])])

    server.script(ok("Fine."))
    async with OpenAICompatibleClient(deepseek().replace(base_url=server.base_url), api_key="sk-test-key-1234",
                                      model="deepseek-chat") as model:
        runtime = ark.AgentRuntime(model, hooks=hooks)
        failed = await runtime.run("Look at my screenshot")
        assert failed.stop_reason == "failed" and failed.error.code == "unsupported_content"
        assert list(runtime.state.history) == [] and server.requests == []
        result = await runtime.run("Hello")
    assert result.stop_reason == "completed" and [m.text for m in runtime.state.history] == ["Hello", "Fine."]
