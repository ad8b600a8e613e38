"""An agent node with a typed output fills a state field (issue 24 item 1, DESIGN §16/§17)."""

from __future__ import annotations

from pydantic import BaseModel

import arknb as ark
from arknb.graphs._steps import _drive_child


class Capital(BaseModel):
    country: str
    city: str


class Trip(BaseModel):
    question: str
    capital: Capital | None = None
    note: str = ""


PARIS = Capital(country="France", city="Paris")


def factory_of(*turns, output_type=None, made=None):
    def factory(session_id: str):
        runtime = ark.AgentRuntime(ark.ScriptedModel(list(turns)), session_id=session_id, output_type=output_type)
        if made is not None:
            made.append(runtime)
        return runtime
    return factory


async def test_an_agent_node_declaring_output_type_puts_the_typed_answer_in_the_field() -> None:
    made: list = []
    g = ark.Graph("typed_node", state=Trip)
    g.agent("ask", factory_of('{"country": "France", "city": 7}', ark.ScriptedTurn(output=PARIS), made=made),
            prompt=lambda s: s.question, output="capital", output_type=Capital)
    g.edge(ark.START, "ask")
    run = await g.run(Trip(question="Capital of France?"))
    assert run.status == "completed"
    assert run.state.capital == PARIS and isinstance(run.state.capital, Capital)
    assert len(made[0].model.requests) == 2  # the wrong try went back to the model, as in any typed run


async def test_a_runtime_with_its_own_output_type_fills_the_field_typed() -> None:
    g = ark.Graph("typed_runtime", state=Trip)
    g.agent("ask", factory_of(ark.ScriptedTurn(output=PARIS), output_type=Capital),
            prompt=lambda s: s.question, output="capital")
    g.edge(ark.START, "ask")
    run = await g.run(Trip(question="Capital of France?"))
    assert run.status == "completed" and run.state.capital == PARIS


async def test_a_typed_answer_the_state_field_refuses_fails_the_node_naming_it() -> None:
    g = ark.Graph("typed_wrong_field", state=Trip)
    g.agent("ask", factory_of(ark.ScriptedTurn(output=PARIS)), prompt=lambda s: s.question, output="note",
            output_type=Capital)
    g.edge(ark.START, "ask")
    run = await g.run(Trip(question="Capital of France?"))
    assert run.status == "failed"
    assert run.error.code == "graph_node_failed" and "'ask'" in run.error.message and "note" in run.error.message


async def test_an_output_type_pydantic_cannot_validate_is_refused_when_the_node_is_added() -> None:
    g = ark.Graph("typed_bad", state=Trip)
    try:
        g.agent("ask", factory_of(), prompt=lambda s: s.question, output="capital", output_type=object())
    except ark.ArkError as exc:
        assert exc.code == "invalid_argument" and "output_type" in exc.message
    else:
        raise AssertionError("an output_type pydantic cannot validate was taken")


async def test_a_child_that_finished_before_a_crash_gives_its_saved_typed_answer(tmp_path) -> None:
    # The child's run completed and was saved, the graph's step was not: a restore reads the
    # answer from the child's history, where the typed value is saved with its message.
    storage = ark.FileStateStorage(tmp_path)
    child = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(output=PARIS)]), storage=storage,
                             session_id="graph.g.ask.1", output_type=Capital)
    await child.run("Capital of France?")
    again = await ark.AgentRuntime.restore("graph.g.ask.1", storage=storage, model=ark.ScriptedModel([]))
    stop, answer, error = await _drive_child(again, "Capital of France?", Capital)
    assert (stop, error) == ("completed", None)
    assert answer == {"country": "France", "city": "Paris"}
    assert Trip(question="q", capital=answer).capital == PARIS  # what the state model makes of it
