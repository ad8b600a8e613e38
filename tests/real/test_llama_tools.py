"""Tool calls from a real llama.cpp server (issue 24 item 4: "tool calls if you find how").

What was found (llama.cpp 11434.0.0, SmolLM2-135M-Instruct):

* With the model's own chat template (ChatML without tools) the server ignores ``tools``: the
  template has no tool format, so nothing constrains or parses the output.
* With a template that has one (``--chat-template-file`` with llama.cpp's copy of Qwen2.5's,
  ``<tool_call>{json}</tool_call>``), ``tool_choice: "required"`` makes the server constrain
  generation with a grammar built from the tools' schemas and parse the result into
  ``tool_calls``: this 135M model then calls the tool with schema-valid arguments. With
  ``"auto"`` the grammar is lazy (it starts only if the model writes ``<tool_call>``), and
  this small model answers in prose instead.
* A custom ``grammar`` cannot be combined with ``tools`` (the server refuses it).

So the runtime test forces the first call with a ``before_model_call`` hook (``required``
while the last message is the user's, ``none`` after the tool answered), and arknb runs the
real call end to end.
"""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb.hooks import HookRegistry, ModelCallHookResult
from arknb.providers.openai_compat import OpenAICompatibleClient, local

from .conftest import unavailable
from .llama import LlamaUnavailable, start_llama_server

TEMPLATE = "Qwen-Qwen2.5-7B-Instruct.jinja"
ADDED: list[tuple[int, int]] = []


@ark.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ADDED.append((a, b))
    return a + b


@pytest.fixture(scope="module")
def tool_server(llama_server, llama_folder):
    """A second server: the same model with a chat template that has a tool-call format."""
    template = llama_server.templates / TEMPLATE
    if not template.is_file():
        unavailable(f"{template} is missing: the build copies llama.cpp's models/templates/")
    try:
        server, stop = start_llama_server(llama_server.binary, llama_server.model, llama_folder,
                                          "--chat-template-file", str(template))
    except LlamaUnavailable as exc:
        unavailable(str(exc))
    try:
        yield server
    finally:
        stop()


@pytest.fixture
async def tool_client(tool_server):
    async with OpenAICompatibleClient(local(tool_server.base_url, think_tags=False), model="smollm2-135m") as client:
        yield client


def _with_choice(request: ark.ModelRequest, choice: str) -> ark.ModelRequest:
    return request.model_copy(update={"config": request.config.model_copy(update={"tool_choice": choice})})


async def test_tool_choice_required_gives_a_schema_valid_tool_call(tool_client):
    request = ark.ModelRequest(
        messages=(ark.AgentMessage.user("What is 17 + 25? Use the add tool."),),
        tools=(add.definition,),
        config=ark.ModelConfig(max_tokens=64, temperature=0.0, tool_choice="required"))
    response = await tool_client.generate(request)
    assert response.finish_reason == "tool_calls", (response.finish_reason, response.message.text)
    (call,) = response.message.tool_calls
    arguments = json.loads(call.arguments_json)
    assert call.name == "add" and set(arguments) == {"a", "b"}
    assert all(isinstance(v, int) for v in arguments.values())


async def test_the_runtime_runs_a_real_tool_call_end_to_end(tool_client):
    ADDED.clear()
    hooks = HookRegistry()

    @hooks.before_model_call
    def call_the_tool_first(ctx):
        last = ctx.request.messages[-1]
        return ModelCallHookResult.proceed(_with_choice(ctx.request, "required" if last.role == "user" else "none"))

    runtime = ark.AgentRuntime(tool_client, tools=[add], hooks=hooks,
                               config=ark.ModelConfig(max_tokens=48, temperature=0.0), max_turns=3)
    events = []
    runtime.bus.subscribe("tool.after", events.append)
    result = await runtime.run("What is 17 + 25? Use the add tool.")
    assert result.stop_reason == "completed", result.error
    assert len(ADDED) == 1 and len(events) == 1  # the real model's call ran once, through the loop
    (a, b) = ADDED[0]
    assert events[0].payload["result"]["text"] == str(a + b)
    roles = [m.role.value for m in runtime.state.history]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.final_message.text.strip()  # the model answered after the tool's result
