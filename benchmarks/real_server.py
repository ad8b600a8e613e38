"""Tokens per second from a real llama.cpp server: through arknb vs curl, same server, same run.

arknb must not be the bottleneck (issue 24: ≥ 0.95× of curl). Each round streams the same
request twice, alternating which goes first: once with the ``curl`` binary (reading its
output line by line as it arrives) and once through ``OpenAICompatibleClient.stream``.
``ignore_eos`` makes the server generate exactly ``--tokens`` tokens both times. The rate is
the decode rate: completion tokens after the first one, over the time from the first
streamed token to the end of the stream (prompt processing is the server's, not ours).
Prints each side's median and the ratio arknb / curl.

The server: ``ARKNB_LLAMA_URL`` (an OpenAI-compatible root such as http://127.0.0.1:8080/v1)
if set, else the cached build (``tests/real/build_llama_server.sh``) started on loopback.

Usage: python benchmarks/real_server.py [--rounds 7] [--tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb as ark  # noqa: E402
from arknb.domain import ModelComplete, TextDelta  # noqa: E402
from arknb.providers.openai_compat import OpenAICompatibleClient, local  # noqa: E402

PROMPT = "Write a short story about a lighthouse keeper and a storm."


def body(tokens: int) -> dict:
    return {"model": "smollm2", "messages": [{"role": "user", "content": PROMPT}], "stream": True,
            "stream_options": {"include_usage": True}, "max_tokens": tokens, "temperature": 0.0, "seed": 7,
            "ignore_eos": True}


async def with_curl(base_url: str, tokens: int) -> float:
    proc = await asyncio.create_subprocess_exec(
        "curl", "-sS", "-N", "-H", "Content-Type: application/json", "-d", json.dumps(body(tokens)),
        base_url + "/chat/completions", stdout=asyncio.subprocess.PIPE)
    first = end = None
    generated = 0
    async for raw in proc.stdout:
        line = raw.decode().strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            end = time.perf_counter()
            break
        chunk = json.loads(data)
        if first is None and any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or ()):
            first = time.perf_counter()
        if chunk.get("usage"):
            generated = chunk["usage"]["completion_tokens"]
    await proc.wait()
    return (generated - 1) / (end - first)


async def with_arknb(client: OpenAICompatibleClient, tokens: int) -> float:
    request = ark.ModelRequest(messages=(ark.AgentMessage.user(PROMPT),), config=ark.ModelConfig(
        max_tokens=tokens, temperature=0.0, extensions={"seed": 7, "ignore_eos": True}))
    first = None
    generated = 0
    async for event in client.stream(request):
        if first is None and isinstance(event, TextDelta) and event.text:
            first = time.perf_counter()
        elif isinstance(event, ModelComplete):
            generated = event.response.usage.output_tokens
    end = time.perf_counter()
    return (generated - 1) / (end - first)


async def measure(base_url: str, rounds: int, tokens: int) -> None:
    async with OpenAICompatibleClient(local(base_url, think_tags=False, extensions=["ignore_eos"]),
                                      model="smollm2") as client:
        await with_arknb(client, 8)  # warm: the model's first request, the connection
        curl, arknb = [], []
        for i in range(rounds):
            if i % 2:
                arknb.append(await with_arknb(client, tokens))
                curl.append(await with_curl(base_url, tokens))
            else:
                curl.append(await with_curl(base_url, tokens))
                arknb.append(await with_arknb(client, tokens))
    c, a = statistics.median(curl), statistics.median(arknb)
    print(f"llama-server SmolLM2-135M, {tokens} tokens per request, {rounds} rounds (alternating order)")
    print(f"  curl   median {c:7.1f} tokens/s   (all: {', '.join(f'{x:.1f}' for x in curl)})")
    print(f"  arknb  median {a:7.1f} tokens/s   (all: {', '.join(f'{x:.1f}' for x in arknb)})")
    print(f"  ratio arknb / curl = {a / c:.3f}  (target ≥ 0.95)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    if shutil.which("curl") is None:
        sys.exit("curl is not installed: it is the baseline")
    url = os.environ.get("ARKNB_LLAMA_URL")
    if url:
        asyncio.run(measure(url.rstrip("/"), args.rounds, args.tokens))
        return
    from tests.real.llama import LlamaUnavailable, cached_paths, start_llama_server

    folder = Path(tempfile.mkdtemp(prefix="arknb-bench-llama-"))
    try:
        binary, model = cached_paths()
        server, stop = start_llama_server(binary, model, folder)
    except LlamaUnavailable as exc:
        shutil.rmtree(folder)
        sys.exit(f"no server: {exc}")
    try:
        asyncio.run(measure(server.base_url, args.rounds, args.tokens))
    finally:
        stop()
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
