"""Notebook 04_timeline.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "04_timeline.ipynb"

CELLS = [
    md("""
# 04 · Timeline: inspect and export a trace

Every run publishes events: model calls and their streamed chunks, tool calls,
hook decisions, saves, the end of the run. `TimelineWidget` draws them as rows and
as a waterfall of nested spans (runs, turns, model calls, tool calls); you can filter
by type, by run and by span, search, open an event's payload, and export everything
as JSONL. It stays fast for long sessions (only the rows on screen are drawn) and
the saved notebook shows a static summary where no kernel runs.
"""),
    code("""
import asyncio
import json
import tempfile
from pathlib import Path

import arknb as ark


@ark.tool
async def fetch_weather(city: str) -> str:
    \"\"\"Current weather for a city.\"\"\"
    await asyncio.sleep({"Paris": 0.15, "Oslo": 0.3}.get(city, 0.1))  # a weather service takes a moment
    return {"Paris": "18°C, cloudy", "Oslo": "4°C, snow"}.get(city, "unknown")



# Small delays between streamed chunks (and in the tool) give the waterfall's spans real widths.
model = ark.ScriptedModel([
    ark.ScriptedTurn(reasoning=["Two cities: ", "call the tool twice."],
                     text=["Checking ", "both ", "cities."], chunk_delay=0.05,
                     tool_calls=[
                         ark.ToolCall(id="w1", name="fetch_weather", arguments_json='{"city": "Paris"}', index=0),
                         ark.ToolCall(id="w2", name="fetch_weather", arguments_json='{"city": "Oslo"}', index=1),
                     ],
                     usage=ark.Usage(input_tokens=42, output_tokens=12)),
    ark.ScriptedTurn(text=["Paris: 18°C, cloudy. ", "Oslo: ", "4°C, snow."], chunk_delay=0.05,
                     usage=ark.Usage(input_tokens=80, output_tokens=10)),
])
runtime = ark.AgentRuntime(model, tools=[fetch_weather])
"""),
    md("""
Show the timeline first, then run: it updates live.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
timeline = ark.TimelineWidget(runtime)
timeline
"""),
    code("""
result = await runtime.run("Weather in Paris and Oslo?")
print("stop_reason:", result.stop_reason)
print("final text: ", result.final_message.text)
"""),
    md("""
## The same trace in code

The widget keeps the events it saw. Their types, in order:
"""),
    code("""
events = timeline.events
print(len(events), "events")
print(" ".join(e["type"] for e in events if e["type"] != ark.EventTypes.LLM_CHUNK))
"""),
    md("""
The two tool calls of one turn ran as one batch (same `batch_id`), concurrently;
their results are ordered by call index:
"""),
    code("""
for e in events:
    if e["type"] == ark.EventTypes.TOOL_AFTER:
        p = e["payload"]
        print(p["call"]["id"], p["call"]["name"], "->", p["result"]["text"])
"""),
    md("""
Spans are what the waterfall draws, nested: a run holds its turns, a turn its model
call and tool calls (times are seconds from the first event; click a span in the
widget to see only its rows):
"""),
    code("""
for span in timeline.spans():
    label = "(run id)" if span["kind"] == "run" else span["label"]
    print(f"{'  ' * span['depth']}{span['kind']:<6} {label:<20} {span['status']}")
"""),
    md("""
## Export

`to_jsonl` writes a trace file: a header line (the format's version, how many events,
and how many older ones the widget no longer kept), then one event per line; it is what
`arknb.eval.trace.from_jsonl` reads. The widget's **Export** button downloads the
events the view holds in the same format, header first. Any tool that reads JSON lines can take it from there.
"""),
    code("""
path = Path(tempfile.mkdtemp()) / "trace.jsonl"
count = timeline.to_jsonl(path)
header, *lines = path.read_text().splitlines()
print(count, "events,", len(lines), "event lines after the header")
print(sorted(json.loads(header)))
"""),
    md("""
A timeline can also be built from recorded events, with no runtime:
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget([json.loads(line) for line in lines])
"""),
]
