"""A crash while recording loses at most the call in flight (a real SIGKILL), and a cassette
recorded from the real OpenAI-compatible client over a loopback server replays offline
to the same transcript and holds no key, header or base URL."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import arknb as ark
import arknb.eval as ev
from arknb.providers.openai_compat import OpenAICompatibleClient, deepseek
from tests.providers.openai_sse_server import Reply, SSEServer, chunk, sse

from ._kit import add, record, types

CHILD = Path(__file__).with_name("_record_child.py")
REPO = Path(__file__).resolve().parents[2]


def test_sigkill_while_recording_keeps_every_finished_call(tmp_path):
    path = tmp_path / "crash.jsonl"
    proc = subprocess.Popen([sys.executable, str(CHILD), str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "CALL3", (line, proc.stderr.read() if proc.poll() is not None else "")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    replay = ev.ReplayModel(path)
    assert replay.records == 2                     # the two finished calls; the one in flight is lost
    model = ev.fork(path, at_call=2, then=ark.ScriptedModel(["Done: 3 and 7."]))
    runtime = ark.AgentRuntime(model, tools=[add])
    outcome = asyncio.run(runtime.run("go"))
    assert outcome.text == "Done: 3 and 7." and (model.replayed, model.forwarded) == (2, 1)


def _turns() -> list[Reply]:
    return [
        Reply([sse(chunk(reasoning="Need the tool."), chunk("Let me "), chunk("add."),
                   chunk(tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                                      "function": {"name": "add", "arguments": '{"a": 1, '}}]),
                   chunk(tool_calls=[{"index": 0, "function": {"arguments": '"b": 2}'}}]),
                   chunk(finish="tool_calls"),
                   chunk(usage={"prompt_tokens": 20, "completion_tokens": 10}, choices=False))]),
        Reply([sse(chunk("It is "), chunk("3."), chunk(finish="stop"),
                   chunk(usage={"prompt_tokens": 40, "completion_tokens": 4}, choices=False))]),
    ]


async def test_a_cassette_of_the_real_client_replays_offline_and_holds_no_secret(tmp_path):
    key = "sk-cassette-secret-0123456789"
    server = SSEServer().start()
    try:
        server.script(*_turns())
        path = tmp_path / "deepseek.jsonl"
        async with OpenAICompatibleClient(deepseek().replace(base_url=server.base_url), api_key=key,
                                          model="deepseek-chat", headers={"X-Team": "evals"}) as client:
            runtime = ark.AgentRuntime(ev.Recorder(client, path), tools=[add], system_prompt="Be brief.")
            recorded = record(runtime)
            result = await runtime.run("What is 1 + 2?")
        assert result.stop_reason == "completed" and result.text == "It is 3.", result.error
        assert len(server.requests) == 2
        assert server.requests[0].headers["authorization"] == f"Bearer {key}"   # the key did go over the wire
    finally:
        server.stop()

    text = path.read_text(encoding="utf-8")
    for secret in (key, "Bearer", "authorization", "Authorization", server.base_url, f"127.0.0.1:{server.port}",
                   "X-Team", "evals"):
        assert secret not in text, f"the cassette contains {secret!r}"
    first = json.loads(text.splitlines()[1])
    assert set(first["request"]) <= {"messages", "tools", "config"}

    # Replayed with no server and no key: the same event-type transcript.
    replay_runtime = ark.AgentRuntime(ev.ReplayModel(path), tools=[add], system_prompt="Be brief.")
    replayed = record(replay_runtime)
    again = await replay_runtime.run("What is 1 + 2?")
    assert again.text == "It is 3." and again.usage == result.usage
    assert types(replayed) == types(recorded)
    assert ev.first_divergence(recorded, replayed) is None
