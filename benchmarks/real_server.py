"""Tokens per second from a real llama.cpp server: through arknb vs curl, same server, same run.

arknb must not be the bottleneck (issue 24: ≥ 0.95× of curl). Each round streams the same
request twice, alternating which goes first: once with the ``curl`` binary (reading its
output line by line as it arrives) and once through ``OpenAICompatibleClient.stream``.
``ignore_eos`` makes the server generate exactly ``--tokens`` tokens both times. The rate is
the decode rate: completion tokens after the first one, over the time from the first
streamed token to the end of the stream (prompt processing is the server's, not ours).
Prints each side's median and the ratio arknb / curl.

On a shared machine the server's own speed swings from request to request (here 9 to 70
tokens/s), which swamps a ratio of raw rates. So each request is also set against the server's
own decode time for it (``/metrics``: ``tokens_predicted_seconds_total``): *keep-up* = server
decode time / client decode time, 1.0 when the client reads tokens as fast as the server makes
them. The keep-up medians and their ratio say whether arknb is ever the bottleneck.

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

import httpx  # noqa: E402

import arknb as ark  # noqa: E402
from arknb.domain import ModelComplete, TextDelta  # noqa: E402
from arknb.providers.openai_compat import OpenAICompatibleClient, local  # noqa: E402

PROMPT = "Write a short story about a lighthouse keeper and a storm."


def body(tokens: int) -> dict:
    return {"model": "smollm2", "messages": [{"role": "user", "content": PROMPT}], "stream": True,
            "stream_options": {"include_usage": True}, "max_tokens": tokens, "temperature": 0.0, "seed": 7,
            "ignore_eos": True}


async def decode_seconds(base_url: str) -> float | None:
    """The server's total decode time so far (``/metrics``), None if it does not serve metrics."""
    root = base_url.rsplit("/v1", 1)[0]
    async with httpx.AsyncClient(timeout=10.0) as http:
        response = await http.get(root + "/metrics")
    if response.status_code != 200:
        return None
    for line in response.text.splitlines():
        if line.startswith("llamacpp:tokens_predicted_seconds_total "):
            return float(line.split()[-1])
    return None


async def timed(base_url: str, run) -> tuple[float, float | None]:
    """``(client tokens/s, keep-up)`` of one request."""
    before = await decode_seconds(base_url)
    generated, first, end = await run()
    after = await decode_seconds(base_url)
    client = end - first
    keep_up = None if before is None or after is None else (after - before) * (generated - 1) / generated / client
    return (generated - 1) / client, keep_up


async def with_curl(base_url: str, tokens: int) -> tuple[int, float, float]:
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
    return generated, first, end


async def with_arknb(client: OpenAICompatibleClient, tokens: int) -> tuple[int, float, float]:
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
    return generated, first, end


def _line(name: str, values: list[float]) -> str:
    return f"  {name:<6} median {statistics.median(values):7.2f}   (all: {', '.join(f'{x:.2f}' for x in values)})"


async def measure(base_url: str, rounds: int, tokens: int) -> None:
    async with OpenAICompatibleClient(local(base_url, think_tags=False, extensions=["ignore_eos"]),
                                      model="smollm2") as client:
        await with_arknb(client, 8)  # warm: the model's first request, the connection
        results: dict[str, list[tuple[float, float | None]]] = {"curl": [], "arknb": []}
        sides = {"curl": lambda: with_curl(base_url, tokens), "arknb": lambda: with_arknb(client, tokens)}
        for i in range(rounds):
            for name in (("arknb", "curl") if i % 2 else ("curl", "arknb")):
                results[name].append(await timed(base_url, sides[name]))
    print(f"llama-server SmolLM2-135M, {tokens} tokens per request, {rounds} rounds (alternating order)")
    print("tokens/s as the client saw them:")
    for name, rows in results.items():
        print(_line(name, [rate for rate, _ in rows]))
    c, a = (statistics.median(rate for rate, _ in results[n]) for n in ("curl", "arknb"))
    print(f"  ratio arknb / curl = {a / c:.3f}  (target ≥ 0.95; raw rates swing with the machine's load)")
    if all(k is not None for rows in results.values() for _, k in rows):
        print("keep-up (server decode time / client decode time, 1.0 = the client is never the bottleneck):")
        for name, rows in results.items():
            print(_line(name, [k for _, k in rows]))
        kc, ka = (statistics.median(k for _, k in results[n]) for n in ("curl", "arknb"))
        print(f"  ratio arknb / curl = {ka / kc:.3f}  (target ≥ 0.95)")


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
