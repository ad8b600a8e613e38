"""ev.run_suite: real concurrency on the running loop, failures isolated, repeats, timeouts,
multi-turn and simulated-user cases, the progress bar, and bounded memory."""

from __future__ import annotations

import asyncio
import gc
import io
import tracemalloc

import pytest

import arknb as ark
import arknb.eval as ev
from arknb import ArkError
from arknb.eval import _progress

from ._kit import add, add_model


async def test_cases_run_concurrently_on_the_running_loop_up_to_the_limit():
    loop = asyncio.get_running_loop()
    barrier = asyncio.Barrier(4)   # passes only when four runs are inside the tool at once
    active = {"now": 0, "max": 0, "loops": set()}

    @ark.tool
    async def meet() -> str:
        """Wait for the others."""
        active["now"] += 1
        active["max"] = max(active["max"], active["now"])
        active["loops"].add(asyncio.get_running_loop())
        await barrier.wait()
        active["now"] -= 1
        return "met"

    def make_runtime(case):
        model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="m", name="meet")]), "All met."])
        return ark.AgentRuntime(model, tools=[meet])

    cases = [ev.Case(f"case {i}", "meet", graders=[ev.contains("met")]) for i in range(8)]
    async with asyncio.timeout(60):
        report = await ev.run_suite(cases, make_runtime, concurrency=4, progress=False)
    assert [r.status for r in report.rows] == ["passed"] * 8
    assert active["max"] == 4 and active["loops"] == {loop}
    assert [r.name for r in report.rows] == [c.name for c in cases]


async def test_one_failing_case_never_stops_the_others():
    @ev.grader
    def broken(case, result):
        raise ZeroDivisionError("division by zero")

    def make_runtime(case):
        if case.name == "no runtime":
            raise RuntimeError("could not build it")
        if case.name == "not a runtime":
            return "hello"
        if case.name == "model fails":
            return ark.AgentRuntime(ark.ScriptedModel([]))
        return ark.AgentRuntime(add_model(), tools=[add])

    cases = [ev.Case("good", "1 + 2?", graders=[ev.contains("3")]),
             ev.Case("wrong", "1 + 2?", graders=[ev.contains("4")]),
             ev.Case("grader raises", "1 + 2?", graders=[ev.contains("3"), broken]),
             ev.Case("no runtime", "1 + 2?"),
             ev.Case("not a runtime", "1 + 2?"),
             ev.Case("model fails", "1 + 2?")]
    report = await ev.run_suite(cases, make_runtime, concurrency=2, progress=False)
    rows = {r.name: r for r in report.rows}
    assert rows["good"].status == "passed" and rows["wrong"].status == "failed"
    assert rows["grader raises"].status == "errored"
    assert rows["grader raises"].error == "grader 'broken': ZeroDivisionError: division by zero"
    assert rows["no runtime"].error == "make_runtime raised RuntimeError: could not build it"
    assert "make_runtime must return an AgentRuntime" in rows["not a runtime"].error
    assert rows["model fails"].status == "errored" and "script_exhausted" in rows["model fails"].error
    assert rows["model fails"].stop_reason == "failed"
    assert [r.name for r in report.passed] == ["good"] and [r.name for r in report.failed] == ["wrong"]
    assert len(report.errored) == 4 and report.pass_rate == pytest.approx(1 / 6)


async def test_repeats_count_passes_and_flag_flaky_cases():
    calls = {"n": 0}

    @ev.grader
    def every_other(case, result):
        calls["n"] += 1
        return calls["n"] % 2 == 1

    cases = [ev.Case("steady", "1 + 2?", graders=[ev.contains("3")]),
             ev.Case("flaky", "1 + 2?", graders=[every_other])]
    report = await ev.run_suite(cases, lambda case: ark.AgentRuntime(add_model(), tools=[add]), repeats=4,
                                concurrency=1, progress=False)
    steady, flaky = report.rows
    assert (steady.passes, steady.runs, steady.flaky, steady.status) == (4, 4, False, "passed")
    assert (flaky.passes, flaky.runs, flaky.flaky, flaky.status) == (2, 4, True, "failed")
    assert report.flaky == [flaky] and report.pass_rate == pytest.approx(6 / 8)
    assert flaky.grades[0].score == pytest.approx(0.5) and flaky.grades[0].explanation.startswith("passed 2/4")
    assert [r.repeat for r in report.runs("flaky")] == [0, 1, 2, 3]


async def test_a_case_past_its_timeout_is_errored_and_its_run_cancelled():
    stuck = asyncio.Event()

    @ark.tool
    async def wait_forever() -> str:
        """Never returns."""
        await stuck.wait()
        return "never"

    def make_runtime(case):
        if case.name == "slow":
            turns = [ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="w", name="wait_forever")]), "done"]
            return ark.AgentRuntime(ark.ScriptedModel(turns), tools=[wait_forever])
        return ark.AgentRuntime(add_model(), tools=[add])

    report = await ev.run_suite([ev.Case("slow", "wait"), ev.Case("quick", "1 + 2?")], make_runtime,
                                timeout=0.5, progress=False)
    slow, quick = report.rows
    assert slow.status == "errored" and "case_timeout" in slow.error and "timeout=0.5s" in slow.error
    assert quick.status == "passed"


async def test_a_multi_turn_case_runs_its_turns_on_one_runtime():
    seen = []

    def make_runtime(case):
        runtime = ark.AgentRuntime(ark.ScriptedModel(["Hello!", "You said hi twice.", "Bye."]))
        seen.append(runtime)
        return runtime

    case = ev.Case("chat", ["Hi", "Hi again", "Bye"], graders=[ev.exact("Bye."), ev.max_turns(3)])
    report = await ev.run_suite([case], make_runtime, progress=False)
    assert report.rows[0].status == "passed" and report.rows[0].turns == 3
    assert [m.text for m in seen[0].history if m.role == "user"] == ["Hi", "Hi again", "Bye"]
    result = report.results("chat")[0]
    assert [e.type for e in result.events].count("agent.started") == 3


async def test_a_simulated_user_plays_the_user_until_it_is_done():
    user_model = ark.ScriptedModel(["And what is 2 + 2?", "[DONE]"])
    user = ev.simulated_user(user_model, "A pupil checking sums.", max_user_turns=3)
    agent = ark.ScriptedModel(["It is 3.", "It is 4."])
    case = ev.Case("pupil", "What is 1 + 2?", graders=[ev.exact("It is 4.")], user=user)
    report = await ev.run_suite([case], lambda c: ark.AgentRuntime(agent), progress=False)
    assert report.rows[0].status == "passed" and report.rows[0].turns == 2
    first, second = user_model.requests
    assert "A pupil checking sums." in first.messages[0].text and "[DONE]" in first.messages[0].text
    # The user model sees the conversation from the user's side.
    assert [(m.role.value, m.text) for m in first.messages[1:]] == [("assistant", "What is 1 + 2?"),
                                                                     ("user", "It is 3.")]
    assert second.messages[-1].text == "It is 4."


async def test_a_simulated_user_can_open_and_is_capped_by_max_user_turns():
    user = ev.simulated_user(ark.ScriptedModel(["Hi!", "More?", "More!"]), "Chatty.", max_user_turns=2)
    agent = ark.ScriptedModel(["Hello.", "Sure."])
    report = await ev.run_suite([ev.Case("open", None, user=user)], lambda c: ark.AgentRuntime(agent),
                                progress=False)
    assert report.rows[0].status == "passed" and report.rows[0].turns == 2
    with pytest.raises(ArkError, match="needs an input"):
        ev.Case("nothing", None)


def test_bad_suite_arguments_are_refused():
    case = ev.Case("a", "hi")

    async def go(**kw):
        return await ev.run_suite(kw.pop("cases", [case]), kw.pop("make", lambda c: None), **kw)

    for kw, text in (({"concurrency": 0}, "concurrency"), ({"repeats": 0}, "repeats"),
                     ({"cases": [case, ev.Case("a", "again")]}, "two cases are named 'a'"),
                     ({"cases": ["a"]}, r"cases\[0\] must be an ev.Case"), ({"make": 3}, "make_runtime"),
                     ({"timeout": -1}, "timeout")):
        with pytest.raises(ArkError, match=text):
            asyncio.run(go(**kw))


# -- the progress bar --------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_a_text_bar_is_drawn_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    cases = [ev.Case(f"c{i}", "1 + 2?", graders=[ev.contains("3" if i else "4")]) for i in range(3)]
    await ev.run_suite(cases, lambda c: ark.AgentRuntime(add_model(), tools=[add]), progress=True)
    drawn = terminal.getvalue()
    assert "\r[" in drawn and "3/3 · 2 passed · 1 failed · 0 errored" in drawn and drawn.endswith("\n")


async def test_no_bar_when_not_asked_or_not_on_a_terminal(monkeypatch):
    piped = io.StringIO()
    monkeypatch.setattr("sys.stderr", piped)
    await ev.run_suite([ev.Case("c", "1 + 2?")], lambda c: ark.AgentRuntime(add_model(), tools=[add]))
    assert piped.getvalue() == ""


def test_in_a_notebook_the_bar_is_an_ipywidgets_progress_bar(monkeypatch, capsys):
    import ipywidgets

    monkeypatch.setattr(_progress, "_in_notebook", lambda: True)
    bar = _progress.make_progress(True, 3)
    assert isinstance(bar.bar, ipywidgets.IntProgress) and bar.bar.max == 3
    for status in ("passed", "failed", "passed"):
        bar.advance(status)
    bar.close()
    assert bar.bar.value == 3 and bar.bar.bar_style == "warning"
    assert bar.text.value == "3/3 · 2 passed · 1 failed · 0 errored"


# -- memory ------------------------------------------------------------------------------

@ark.tool
def fetch_page(url: str) -> str:
    """A big tool result: every case's events carry about 25 kB of JSON."""
    return "lorem ipsum " * 1700


def _page_model() -> ark.ScriptedModel:
    return ark.ScriptedModel([
        ark.ScriptedTurn(text="Fetching.", tool_calls=[ark.ToolCall(id="f", name="fetch_page",
                                                                    arguments_json='{"url": "https://example.org"}')]),
        ark.ScriptedTurn(text=["The page ", "is lorem ipsum."]),
    ])


_finished = {"cases": 0}


@ev.grader
def collect_garbage(case, result):
    # Test instrumentation, not a check: every 10 cases, free the finished runtimes'
    # reference cycles, so the traced peak shows what the suite keeps alive rather than
    # garbage the cycle collector would reclaim at a moment of its own choosing.
    _finished["cases"] += 1
    if _finished["cases"] % 10 == 0:
        gc.collect()
    return True


async def _replayed_suite_peak(path, n: int) -> tuple[int, int]:
    cases = [ev.Case(f"case {i}", "Summarise example.org", graders=[ev.contains("lorem"), collect_garbage])
             for i in range(n)]
    make = lambda case: ark.AgentRuntime(ev.ReplayModel(path), tools=[fetch_page])  # noqa: E731
    gc.collect()
    tracemalloc.start()
    try:
        report = await ev.run_suite(cases, make, concurrency=4, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report.passed) == n
    return peak, report._spool.size


async def test_a_suite_of_200_replayed_cases_runs_in_bounded_memory(tmp_path):
    path = tmp_path / "pages.jsonl"
    await ark.AgentRuntime(ev.Recorder(_page_model(), path), tools=[fetch_page]).run("Summarise example.org")
    await _replayed_suite_peak(path, 4)                      # warm-up: imports, caches
    small, _ = await _replayed_suite_peak(path, 50)
    large, spooled = await _replayed_suite_peak(path, 200)
    # The 200 cases' events (several MB) wait in the report's spool file, not in memory:
    # four times the cases costs only their small summaries on top of the runs in flight.
    assert spooled > 200 * 20_000
    # What the 150 more cases add to the peak is a small part of what their events would
    # take if the report kept them in memory (the peak itself moves with the moment the
    # collector runs, so the growth is compared with the events, not with the smaller peak).
    extra_events = spooled * 150 // 200
    assert large - small < extra_events / 10, (
        f"traced peak {small:,} B for 50 cases, {large:,} B for 200: +{large - small:,} B for 150 more cases "
        f"whose events take {extra_events:,} B")
    assert large < spooled / 2, f"traced peak {large:,} B for 200 cases whose events take {spooled:,} B"
