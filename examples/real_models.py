"""Point an arknb agent at a real model: DeepSeek, Zhipu GLM, OpenAI, or a local Ollama.

Keys come from environment variables and never appear in state, events or logs:

    export DEEPSEEK_API_KEY=sk-...      python examples/real_models.py deepseek
    export ZHIPUAI_API_KEY=...          python examples/real_models.py zhipu
    export OPENAI_API_KEY=sk-...        python examples/real_models.py openai
    ollama pull qwen3:0.6b              python examples/real_models.py ollama

In a notebook, build the model the same way and ``await runtime.run(...)`` in a cell
(never ``asyncio.run`` inside Jupyter).
"""

from __future__ import annotations

import asyncio
import sys

import arknb as ark
from arknb.providers import openai_compat as oc


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_model(name: str) -> oc.OpenAICompatibleClient:
    """One client per service; ``api_key`` defaults to the profile's environment variable."""
    if name == "deepseek":
        # DEEPSEEK_API_KEY; "deepseek-reasoner" streams its reasoning as reasoning_delta.
        return oc.OpenAICompatibleClient(oc.deepseek(), model="deepseek-chat")
    if name == "zhipu":
        # ZHIPUAI_API_KEY; provider options go to ModelConfig.extensions (see main()).
        return oc.OpenAICompatibleClient(oc.zhipu(), model="glm-4.6")
    if name == "openai":
        return oc.OpenAICompatibleClient(oc.openai(), model="gpt-4.1-mini",
                                         api_key=oc.from_env("OPENAI_API_KEY"))  # read at each request
    if name == "ollama":
        # No key; <think>…</think> from local reasoning models becomes reasoning.
        # vLLM: oc.local("http://localhost:8000/v1"); llama.cpp: oc.local("http://localhost:8080/v1").
        return oc.OpenAICompatibleClient(oc.local("http://localhost:11434/v1"), model="qwen3:0.6b",
                                         timeout=oc.Timeouts(first_output=120.0))
    raise SystemExit(f"unknown provider {name!r}: choose deepseek, zhipu, openai or ollama")


async def main(name: str) -> None:
    config = ark.ModelConfig(temperature=0.2)
    if name == "zhipu":
        config = ark.ModelConfig(temperature=0.2, extensions={"thinking": {"type": "disabled"}})
    async with make_model(name) as model:
        runtime = ark.AgentRuntime(model, tools=[add], system_prompt="Use the add tool for arithmetic.",
                                   config=config)
        def show(event: ark.AgentEvent) -> None:   # an observer: it can never change the run
            if event.payload.get("kind") == "text":
                print(event.payload["text"], end="", flush=True)
        runtime.bus.subscribe(ark.EventTypes.LLM_CHUNK, show)
        result = await runtime.run("What is 19 + 23?")
        print()
        print("stop reason:", result.stop_reason)
        print("answer:", result.final_message.text if result.final_message else None)
        if result.error is not None:
            print("error:", result.error)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ollama"))
