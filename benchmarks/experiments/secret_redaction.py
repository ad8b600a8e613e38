"""What redacting secrets costs subject (b): the (b) run on another arknb tree and on
this one, interleaved run by run in one process, so the comparison does not drift with
the load of a shared machine.

The other tree (e.g. ``main`` before the redaction work) is copied to a temporary folder
as the package ``arknb_base`` (its absolute ``arknb`` imports rewritten), so both
import side by side. Four variants run in turn: each tree with no secret configured (the
shared workload as it is) and with one configured secret that never appears (then every
event payload and every streamed chunk is checked for it), each at 20 and at 40 chunks
per turn. Reported: CPU-time medians per run, the marginal CPU µs per chunk (median of
paired 40-vs-20 differences / 200 extra chunks), and new / base. The garbage collector
runs before each timed run and is off during it (a collection would otherwise land on
whichever variant runs when it is due, a ±20 % effect on a busy machine).

Not part of ``make bench``. Usage:
    mkdir /tmp/base && git archive main arknb | tar -x -C /tmp/base
    .venv/bin/python benchmarks/experiments/secret_redaction.py --base /tmp/base [--runs 200]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arknb  # noqa: E402

from workload import PROMPT, TOOL_CALLS, TURNS, add_args_json, chunk_text  # noqa: E402

SECRET = "bench-secret-never-present-0123456789"
_IMPORT = re.compile(r"^(\s*)(from|import) arknb(\b|\.)", re.MULTILINE)


def load_base(tree: Path, into: Path):
    """``tree/arknb`` imported as ``arknb_base``."""
    target = into / "arknb_base"
    shutil.copytree(tree / "arknb", target, ignore=shutil.ignore_patterns("__pycache__", "static"))
    for source in target.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        source.write_text(_IMPORT.sub(lambda m: f"{m[1]}{m[2]} arknb_base{m[3]}", text), encoding="utf-8")
    sys.path.insert(0, str(into))
    return importlib.import_module("arknb_base")


def build(ark, chunks: int, secret: bool):
    ran = []

    @ark.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(1)
        return a + b

    turns = [ark.ScriptedTurn(text=[chunk_text(t, i) for i in range(chunks)],
                              tool_calls=[ark.ToolCall(id=f"call_{t}", name="add", arguments_json=add_args_json(t))])
             for t in range(TOOL_CALLS)]
    turns.append(ark.ScriptedTurn(text=[chunk_text(TURNS - 1, i) for i in range(chunks)]))
    options = {"secrets": [SECRET]} if secret else {}
    return ark.AgentRuntime(ark.ScriptedModel(turns), tools=[add], system_prompt="Be brief.", **options), ran


async def timed_run(ark, chunks: int, secret: bool) -> float:
    runtime, ran = build(ark, chunks, secret)
    seen = 0
    # Garbage from the variant before is collected first and the collector is off while
    # timing: otherwise a collection lands on whichever variant runs when it is due.
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        async for event in runtime.run_stream(PROMPT):
            if event.type == "llm.chunk":
                seen += 1
        elapsed = time.process_time() - start
    finally:
        gc.enable()
    assert seen == TURNS * chunks and len(ran) == TOOL_CALLS, (seen, len(ran))
    return elapsed


async def measure(packages: dict, runs: int, warmup: int) -> dict:
    variants = [(name, secret) for secret in (False, True) for name in packages]
    samples = {variant: {20: [], 40: []} for variant in variants}
    for index in range(warmup + runs):
        order = variants if index % 2 == 0 else variants[::-1]
        for variant in order:
            name, secret = variant
            for chunks in (20, 40):
                elapsed = await timed_run(packages[name], chunks, secret)
                if index >= warmup:
                    samples[variant][chunks].append(elapsed)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="folder holding the other tree's arknb/")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        packages = {"base": load_base(args.base.resolve(), Path(folder)), "new": arknb}
        samples = asyncio.run(measure(packages, args.runs, args.warmup))
    print(f"(b) arknb, {args.runs} interleaved runs per variant (CPU time), {TURNS} turns x 20 chunks")
    print(f"{'variant':<34} {'µs/run':>8} {'marginal µs/chunk':>18}")
    table = {}
    for (name, secret), by_chunks in samples.items():
        run = statistics.median(by_chunks[20]) * 1e6
        diffs = [b - a for a, b in zip(by_chunks[20], by_chunks[40])]
        chunk = statistics.median(diffs) * 1e6 / (TURNS * 20)
        table[name, secret] = (run, chunk)
        label = f"{name}, {'one configured secret' if secret else 'no secret configured'}"
        print(f"{label:<34} {run:>8,.0f} {chunk:>18.2f}")
    for secret in (False, True):
        (base_run, base_chunk), (new_run, new_chunk) = table["base", secret], table["new", secret]
        label = "one configured secret" if secret else "no secret configured"
        print(f"new/base, {label}: run {new_run / base_run:.3f}x, per chunk {new_chunk - base_chunk:+.2f} µs")


if __name__ == "__main__":
    main()
