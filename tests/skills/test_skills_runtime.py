"""Skills in a runtime (DESIGN §14): always-on sections, activate_skill, state.active_skills."""

from __future__ import annotations

import json

import pytest

import arknb as ark
from arknb import ArkError, EventTypes, ScriptedModel, ScriptedTurn, ToolCall

from ..runtime._approval_kit import EventLog


def _call(call_id: str, tool_name: str, index: int = 0, **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=tool_name, arguments_json=json.dumps(arguments), index=index)


@ark.tool(read_only=True)
def forecast(city: str) -> str:
    """Tomorrow's weather for a city."""
    return f"{city}: sunny, 24 C"


def _skills() -> list[ark.Skill]:
    return [
        ark.Skill("tone", "Keep a friendly tone.", "Be friendly and brief.", always_on=True),
        ark.Skill("weather", "Answer questions about the weather.", "Use forecast; give degrees Celsius.",
                  tools=[forecast]),
        ark.Skill("haiku", "Answer as a haiku.", "Write every answer as a 5-7-5 haiku."),
    ]


def _tools(request) -> list[str]:
    return [t.name for t in request.tools]


async def test_always_on_skills_join_the_prompt_and_the_others_are_listed_in_activate_skill():
    model = ScriptedModel(["Hi!"])
    await ark.AgentRuntime(model, system_prompt="You help.", skills=_skills()).run("hello")

    [request] = model.requests
    system = request.messages[0].text
    assert system == "You help.\n\n## Skill: tone\nBe friendly and brief."
    assert _tools(request) == ["activate_skill"]
    [activate] = request.tools
    assert "- weather: Answer questions about the weather.\n- haiku: Answer as a haiku." in activate.description
    assert activate.parameters["properties"]["name"]["enum"] == ["weather", "haiku"]
    assert activate.read_only


async def test_activate_skill_adds_instructions_and_tools_from_the_next_call_on():
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[_call("a1", "activate_skill", name="weather"),
                                 _call("f0", "forecast", 1, city="Oslo")]),  # not offered yet in this turn
        ScriptedTurn(tool_calls=[_call("f1", "forecast", city="Oslo")]),
        "Sunny in Oslo."])
    runtime = ark.AgentRuntime(model, skills=_skills())
    log = EventLog(runtime)

    result = await runtime.run("Weather in Oslo tomorrow?")

    assert result.stop_reason == "completed" and runtime.state.active_skills == ("weather",)
    first, second, third = model.requests
    assert _tools(first) == ["activate_skill"] and _tools(second) == ["activate_skill", "forecast"]
    assert "## Skill: weather\nUse forecast; give degrees Celsius.\nTools of this skill: forecast." in \
        second.messages[0].text
    assert "## Skill: weather" not in first.messages[0].text
    answers = {m.tool_call_id: m for m in runtime.history if m.role == "tool"}
    assert "is active" in answers["a1"].text and "forecast" in answers["a1"].text
    assert answers["f0"].is_error and "unknown tool 'forecast'" in answers["f0"].text
    assert answers["f1"].text == "Oslo: sunny, 24 C"
    [activated] = log.of(EventTypes.SKILL_ACTIVATED)
    assert activated.payload["name"] == "weather" and activated.payload["tools"] == ["forecast"]


async def test_activation_is_kept_across_restore(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    first = ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[_call("a1", "activate_skill", name="haiku")]),
                                            "Ok."]), skills=_skills(), storage=storage, session_id="s")
    await first.run("Be poetic")
    assert json.loads((tmp_path / "s.json").read_text())["extensions"]["skills"] == {"active": ["haiku"]}

    model = ScriptedModel(["An old pond..."])
    restored = await ark.AgentRuntime.restore("s", storage=storage, model=model, skills=_skills())

    assert restored.state.active_skills == ("haiku",)
    await restored.run("A poem please")
    assert "## Skill: haiku\nWrite every answer as a 5-7-5 haiku." in model.requests[0].messages[0].text


async def test_activating_twice_or_an_unknown_skill_changes_nothing():
    model = ScriptedModel([
        ScriptedTurn(tool_calls=[_call("a1", "activate_skill", name="haiku")]),
        ScriptedTurn(tool_calls=[_call("a2", "activate_skill", name="haiku")]),
        ScriptedTurn(tool_calls=[_call("a3", "activate_skill", name="nope")]),
        "done"])
    runtime = ark.AgentRuntime(model, skills=_skills())
    log = EventLog(runtime)
    await runtime.run("go")

    answers = {m.tool_call_id: m for m in runtime.history if m.role == "tool"}
    assert answers["a2"].text == "Skill 'haiku' is already active." and not answers["a2"].is_error
    assert answers["a3"].is_error and "invalid arguments" in answers["a3"].text and "'weather'" in answers["a3"].text
    assert runtime.state.active_skills == ("haiku",) and len(log.of(EventTypes.SKILL_ACTIVATED)) == 1


async def test_a_restored_session_with_a_skill_this_runtime_lacks_keeps_it_recorded(tmp_path):
    storage = ark.FileStateStorage(tmp_path)
    await ark.AgentRuntime(ScriptedModel([ScriptedTurn(tool_calls=[_call("a1", "activate_skill", name="haiku")]),
                                          "Ok."]), skills=_skills(), storage=storage, session_id="s").run("x")
    model = ScriptedModel(["plain"])
    only_weather = [s for s in _skills() if s.name == "weather"]
    runtime = await ark.AgentRuntime.restore("s", storage=storage, model=model, skills=only_weather)
    await runtime.run("again")
    assert runtime.state.active_skills == ("haiku",)  # nothing lost
    assert "haiku" not in model.requests[0].messages[0].text  # but it adds nothing here


async def test_skills_from_a_folder_work_end_to_end(tmp_path):
    folder = tmp_path / "skills" / "counter"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: counter\ndescription: Count words.\n---\nUse count_words.\n")
    (folder / "tools.py").write_text("import arknb as ark\n\n@ark.tool(read_only=True)\n"
                                     "def count_words(text: str) -> int:\n    '''Count words.'''\n"
                                     "    return len(text.split())\n")
    model = ScriptedModel([ScriptedTurn(tool_calls=[_call("a1", "activate_skill", name="counter")]),
                           ScriptedTurn(tool_calls=[_call("c1", "count_words", text="one two three")]),
                           "Three words."])
    runtime = ark.AgentRuntime(model, skills=ark.load_skills(tmp_path / "skills"))
    await runtime.run("How many words?")
    assert [m.text for m in runtime.history if m.role == "tool"][1] == "3"


def test_bad_skills_arguments_are_config_errors():
    with pytest.raises(ArkError, match="load_skills"):
        ark.AgentRuntime(ScriptedModel([]), skills="skills/")
    with pytest.raises(ArkError, match="two skills are named 'tone'"):
        ark.AgentRuntime(ScriptedModel([]), skills=_skills() + [ark.Skill("tone", "d", "x")])

    @ark.tool
    def forecast(city: str) -> str:  # the user's own tool of the same name
        """Another forecast."""
        return "rain"

    with pytest.raises(ArkError) as info:
        ark.AgentRuntime(ScriptedModel([]), tools=[forecast],
                         skills=[ark.Skill("weather", "d", "x", tools=[_skills()[1].tools[0]], always_on=True)])
    assert "extension 'skills' offers a tool named 'forecast'" in info.value.message
    assert ark.AgentRuntime(ScriptedModel([]), skills=[]).extensions == ()


async def test_only_always_on_skills_need_no_activate_tool():
    model = ScriptedModel(["ok"])
    await ark.AgentRuntime(model, skills=[_skills()[0]]).run("hi")
    assert _tools(model.requests[0]) == []
