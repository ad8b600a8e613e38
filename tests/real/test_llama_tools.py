"""Tool calls from a real llama.cpp server (issue 24 item 4: "tool calls if you find how").

What was found (llama.cpp 11434.0.0, SmolLM2-135M-Instruct, temperature 0):

* With the model's own chat template (ChatML without tools) the server ignores ``tools``.
* With a template that has a tool-call format (``--chat-template-file`` with llama.cpp's copy of
  Qwen2.5's: ``<tool_call>{json}</tool_call>``; Hermes-2-Pro's and Llama-3.2's behave alike),
  ``tool_choice: "auto"`` gives prose ("17 + 25 = 32."), and so does ``"required"``: the
  server's grammar for it (logged with ``-v``) is ``root ::= <assistant header> until-<tool_call>?
  tool-calls``, i.e. free text first, the call later, and EOS is barred until a call is
  complete, so this small model rambles until ``max_tokens``. A few-shot example of a call in
  the history did not change that; a custom ``grammar`` with ``tools`` is refused by the server.
* What works: ``"required"`` plus an assistant prefill ``"<tool_call>\\n"`` as the last message.
  The grammar then forces a schema-valid call at once (``add({"a": 17, "b": 25})``), which the
  server parses into ``tool_calls``. But the model does not stop after it: it starts another
  call and is cut by ``max_tokens`` (``finish_reason: "length"``, the last call's arguments
  incomplete JSON); stop strings do not end it.

So the runtime test does what a user would: a ``before_model_call`` hook sends the prefill and
``required`` while the last message is the user's (``none`` after the tool answered), and an
``after_model_call`` hook keeps the first complete call; arknb then runs the real call end to end.
"""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb.hooks import HookRegistry, ModelCallHookResult, ModelResponseHookResult
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


def _rewritten(request: ark.ModelRequest, choice: str, *extra: ark.AgentMessage) -> ark.ModelRequest:
    return request.model_copy(update={"messages": (*request.messages, *extra),
                                      "config": request.config.model_copy(update={"tool_choice": choice})})


PREFILL = ark.AgentMessage.assistant("<tool_call>\n")
QUESTION = ark.AgentMessage.user("What is 17 + 25?")


def _request(*messages: ark.AgentMessage, max_tokens: int = 48) -> ark.ModelRequest:
    return ark.ModelRequest(messages=messages, tools=(add.definition,),
                            config=ark.ModelConfig(max_tokens=max_tokens, temperature=0.0, tool_choice="required"))


async def test_required_alone_gets_prose_from_this_model(tool_client):
    response = await tool_client.generate(_request(QUESTION, max_tokens=16))
    assert response.message.tool_calls == () and response.message.text.strip()
    assert response.finish_reason == "length"  # EOS is barred until a call that never comes


async def test_required_with_a_prefilled_call_marker_gives_a_schema_valid_tool_call(tool_client):
    response = await tool_client.generate(_request(QUESTION, PREFILL))
    first = response.message.tool_calls[0]
    assert first.name == "add" and json.loads(first.arguments_json) == {"a": 17, "b": 25}
    # The model does not stop after one call: a second begins and max_tokens cuts it.
    assert response.finish_reason == "length" and len(response.message.tool_calls) >= 1


async def test_the_runtime_runs_a_real_tool_call_end_to_end(tool_client):
    ADDED.clear()
    hooks = HookRegistry()

    @hooks.before_model_call
    def call_the_tool_first(ctx):
        if ctx.request.messages[-1].role == "user":
            return ModelCallHookResult.proceed(_rewritten(ctx.request, "required", PREFILL))
        # The tool answered: no tools offered (a shorter prompt), the model writes its answer.
        return ModelCallHookResult.proceed(_rewritten(ctx.request, "none").model_copy(update={"tools": ()}))

    @hooks.after_model_call
    def keep_the_first_complete_call(ctx):
        calls = ctx.response.message.tool_calls
        if len(calls) <= 1:
            return None
        message = ctx.response.message.model_copy(update={"tool_calls": calls[:1]})
        return ModelResponseHookResult.proceed(ctx.response.model_copy(
            update={"message": message, "finish_reason": ark.FinishReason.TOOL_CALLS}))

    runtime = ark.AgentRuntime(tool_client, tools=[add], hooks=hooks,
                               config=ark.ModelConfig(max_tokens=32, temperature=0.0), max_turns=3)
    events = []
    runtime.bus.subscribe("tool.after", events.append)
    result = await runtime.run("What is 17 + 25?")
    assert result.stop_reason == "completed", result.error
    assert ADDED == [(17, 25)] and len(events) == 1  # the real model's call ran once, through the loop
    assert events[0].payload["result"]["text"] == "42"
    assert [m.role.value for m in runtime.state.history] == ["user", "assistant", "tool", "assistant"]
    assert result.final_message.text.strip()  # the model answered after the tool's result
