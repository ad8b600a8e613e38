"""A typed answer from a real llama.cpp ``llama-server`` (SmolLM2-135M-Instruct): native
JSON-schema output (``response_format`` json_schema, which llama.cpp turns into a grammar)
validated into a pydantic model, and a non-object type asked under ``"response"`` (issue 24
items 1 and 4). The server comes from ``conftest.py``."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

import arknb as ark
from arknb.providers.openai_compat import OpenAICompatibleClient, local

MODEL = "smollm2-135m"


class Verdict(BaseModel):
    answer: Literal["yes", "no"]
    sure: bool


def runtime_for(client, **options) -> ark.AgentRuntime:
    return ark.AgentRuntime(client, config=ark.ModelConfig(max_tokens=64, temperature=0.0, extensions={"seed": 7}),
                            system_prompt="Answer in JSON.", **options)


async def test_a_typed_answer_through_native_json_schema_output(llama_base_url):
    async with OpenAICompatibleClient(local(llama_base_url, think_tags=False), model=MODEL) as client:
        assert client.capabilities.json_schema_output  # so the runtime asks natively
        runtime = runtime_for(client, output_type=Verdict)
        events = []
        runtime.bus.subscribe("*", events.append)
        result = await runtime.run("Is Paris the capital of France?")
    assert result.stop_reason == "completed", result.error
    assert isinstance(result.output, Verdict) and result.output.answer in ("yes", "no")
    assert Verdict.model_validate_json(result.text) == result.output  # the raw text is the server's JSON
    validated = [e for e in events if e.type == "output.validated"]
    assert len(validated) == 1 and validated[0].payload["mode"] == "native"
    assert validated[0].payload["output"] == result.output.model_dump()
    assert result.usage.reported and result.usage.output_tokens > 0 and not result.truncated


async def test_a_literal_answer_comes_under_response(llama_base_url):
    async with OpenAICompatibleClient(local(llama_base_url, think_tags=False), model=MODEL) as client:
        result = await runtime_for(client).run("Which colour is the sky on a clear day?",
                                                output_type=Literal["red", "green", "blue"])
    assert result.stop_reason == "completed", result.error
    assert result.output in ("red", "green", "blue")
    assert json.loads(result.text) == {"response": result.output}
