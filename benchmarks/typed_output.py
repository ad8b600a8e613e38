"""What a typed answer costs a run (DESIGN §17): the shared workload, text vs output_type.

The shared workload (``workload.py``: 10 turns, 9 ``add`` calls, ``--chunks`` streamed
deltas per turn) with a last turn whose deltas add up to a JSON object. Variants, run
interleaved in one process on a fresh runtime per run (as ``extensions.py`` does):

* ``text``: no output type (the baseline): the JSON arrives as plain text;
* ``typed_native``: ``output_type=Answer`` (a pydantic model) asked natively: every request
  carries the schema (``response_format``), the answer is validated once;
* ``typed_tool``: the same through the ``final_result`` tool (a model without native
  JSON-schema output): every request offers the tool, the call's arguments are validated.

Every run checks that each delta reached the consumer, the tool ran 9 times and (typed)
that ``result.output`` is the expected ``Answer``. Prints medians and ratios to ``text``
(issue 24's target: ≤ 1.1×).

    .venv/bin/python benchmarks/typed_output.py [--runs 60] [--chunks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))

import arknb as ark  # noqa: E402
from arknb_common import make_tool, stream_run  # noqa: E402
from workload import TOOL_CALLS, TURNS, ToolCounter, add_args_json, chunk_text  # noqa: E402


class Answer(BaseModel):
    total: int
    note: str


def answer_chunks(chunks: int) -> list[str]:
    """``chunks`` deltas that join to ``{"total": 45, "note": "<the workload's text>"}``."""
    pieces = [chunk_text(TURNS - 1, i) for i in range(chunks)]
    pieces[0] = '{"total": 45, "note": "' + pieces[0]
    pieces[-1] = pieces[-1] + '"}'
    return pieces


def expected(chunks: int) -> Answer:
    return Answer.model_validate_json("".join(answer_chunks(chunks)))


def script(chunks: int, variant: str) -> ark.ScriptedModel:
    turns = [ark.ScriptedTurn(text=[chunk_text(t, i) for i in range(chunks)],
                              tool_calls=[ark.ToolCall(id=f"call_{t}", name="add", arguments_json=add_args_json(t))])
             for t in range(TOOL_CALLS)]
    last = answer_chunks(chunks)
    if variant == "typed_tool":
        call = ark.ToolCall(id="call_final", name="final_result",
                            arguments_json=expected(chunks).model_dump_json())
        turns.append(ark.ScriptedTurn(text=last, tool_calls=[call]))
    else:
        turns.append(ark.ScriptedTurn(text=last))
    return ark.ScriptedModel(turns, json_schema_output=variant != "typed_tool")


VARIANTS = ("text", "typed_native", "typed_tool")


async def one_run(variant: str, chunks: int) -> float:
    counter = ToolCounter()
    options = {} if variant == "text" else {"output_type": Answer}
    runtime = ark.AgentRuntime(script(chunks, variant), tools=[make_tool(counter)], system_prompt="Be brief.",
                               **options)
    t0 = time.perf_counter()
    outcome = await stream_run(runtime, counter, chunks)
    elapsed = time.perf_counter() - t0
    if outcome.text_chunks != TURNS * chunks or outcome.tool_calls != TOOL_CALLS:
        raise AssertionError(f"{variant}: {outcome}")
    result = runtime.last_result
    if variant == "text":
        assert result.output is None and json.loads(result.text)["total"] == 45
    elif result.output != expected(chunks):
        raise AssertionError(f"{variant}: output {result.output!r}")
    return elapsed


async def main(runs: int, chunks: int, warmup: int) -> None:
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(warmup + runs):
        # Interleaved in a rotating order: drift on a shared machine hits every variant alike.
        for name in names[i % len(names):] + names[:i % len(names)]:
            elapsed = await one_run(name, chunks)
            if i >= warmup:
                samples[name].append(elapsed)
    base = statistics.median(samples["text"])
    print(f"{'variant':14} {'median ms':>10} {'ratio':>7}   ({runs} runs each, {chunks} chunks/turn, {TURNS} turns)")
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:14} {median * 1000:10.2f} {median / base:7.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.chunks, args.warmup))
