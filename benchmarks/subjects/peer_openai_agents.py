"""Subject (f): openai-agents (Agents SDK) with a custom offline ``Model``.

``stream_response`` yields the Responses-API stream events a real provider would
(created, output_item.added, content_part.added, 20 output_text.delta, text.done,
content_part.done, output_item.done, then the function call's added / arguments.delta /
arguments.done / output_item.done, and response.completed). The events are built per
call, as the OpenAI client builds them from SSE. Consumed via ``Runner.run_streamed``
+ ``stream_events()``. Tracing is disabled (offline).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workload import add_args_json, PROMPT, TURNS, Outcome, ToolCounter, chunk_text, main  # noqa: E402

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-benchmark")  # never used: no HTTP

from agents import Agent, Model, RunConfig, Runner, function_tool, set_tracing_disabled  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails  # noqa: E402

set_tracing_disabled(True)


def _turn_of(input_items) -> int:
    if isinstance(input_items, str):
        return 0
    return sum(1 for item in input_items
               if isinstance(item, dict) and item.get("type") == "function_call_output")


def _response(output: list, status: str = "completed") -> Response:
    return Response(
        id="resp_bench", created_at=0, model="scripted", object="response", output=output,
        tool_choice="auto", tools=[], top_p=None, parallel_tool_calls=False, status=status,
        usage=ResponseUsage(
            input_tokens=0, output_tokens=0, total_tokens=0,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        ),
    )


class ScriptedResponsesModel(Model):
    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    async def get_response(self, *args, **kwargs) -> ModelResponse:  # pragma: no cover
        raise NotImplementedError("the benchmark streams")

    async def stream_response(self, system_instructions, input, model_settings, tools,
                              output_schema, handoffs, tracing, *, previous_response_id=None,
                              conversation_id=None, prompt=None):
        turn = _turn_of(input)
        seq = 0
        msg_id = f"msg_{turn}"
        yield ResponseCreatedEvent(type="response.created", sequence_number=seq,
                                   response=_response([], "in_progress"))
        seq += 1
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", output_index=0, sequence_number=seq,
            item=ResponseOutputMessage(id=msg_id, type="message", role="assistant",
                                       status="in_progress", content=[]))
        seq += 1
        yield ResponseContentPartAddedEvent(
            type="response.content_part.added", item_id=msg_id, output_index=0,
            content_index=0, sequence_number=seq,
            part=ResponseOutputText(type="output_text", text="", annotations=[]))
        seq += 1
        parts = []
        for i in range(self.chunks):
            delta = chunk_text(turn, i)
            parts.append(delta)
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta", item_id=msg_id, output_index=0,
                content_index=0, delta=delta, logprobs=[], sequence_number=seq)
            seq += 1
        text = "".join(parts)
        yield ResponseTextDoneEvent(type="response.output_text.done", item_id=msg_id,
                                    output_index=0, content_index=0, text=text, logprobs=[],
                                    sequence_number=seq)
        seq += 1
        done_part = ResponseOutputText(type="output_text", text=text, annotations=[])
        yield ResponseContentPartDoneEvent(type="response.content_part.done", item_id=msg_id,
                                           output_index=0, content_index=0, part=done_part,
                                           sequence_number=seq)
        seq += 1
        message = ResponseOutputMessage(id=msg_id, type="message", role="assistant",
                                        status="completed", content=[done_part])
        yield ResponseOutputItemDoneEvent(type="response.output_item.done", output_index=0,
                                          item=message, sequence_number=seq)
        seq += 1
        output: list = [message]
        if turn < TURNS - 1:
            call_id = f"call_{turn}"
            yield ResponseOutputItemAddedEvent(
                type="response.output_item.added", output_index=1, sequence_number=seq,
                item=ResponseFunctionToolCall(id=f"fc_{turn}", call_id=call_id,
                                              type="function_call", name="add",
                                              arguments="", status="in_progress"))
            seq += 1
            yield ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta", item_id=f"fc_{turn}",
                output_index=1, delta=add_args_json(turn), sequence_number=seq)
            seq += 1
            yield ResponseFunctionCallArgumentsDoneEvent.model_validate({
                "type": "response.function_call_arguments.done", "item_id": f"fc_{turn}",
                "output_index": 1, "arguments": add_args_json(turn), "name": "add",
                "sequence_number": seq})
            seq += 1
            call = ResponseFunctionToolCall(id=f"fc_{turn}", call_id=call_id,
                                            type="function_call", name="add",
                                            arguments=add_args_json(turn), status="completed")
            yield ResponseOutputItemDoneEvent(type="response.output_item.done", output_index=1,
                                              item=call, sequence_number=seq)
            seq += 1
            output.append(call)
        yield ResponseCompletedEvent(type="response.completed", sequence_number=seq,
                                     response=_response(output))


async def make(chunks: int):
    counter = ToolCounter()

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    agent = Agent(name="bench", instructions="Be brief.", tools=[add],
                  model=ScriptedResponsesModel(chunks))
    config = RunConfig(tracing_disabled=True)

    async def run() -> Outcome:
        counter.count = 0
        result = Runner.run_streamed(agent, PROMPT, max_turns=TURNS + 5, run_config=config)
        seen = 0
        async for event in result.stream_events():
            if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                seen += 1
        assert result.final_output.endswith(chunk_text(TURNS - 1, chunks - 1)), result.final_output
        return Outcome(text_chunks=seen, tool_calls=counter.count)

    return run


if __name__ == "__main__":
    main("openai-agents", make)
