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
]
