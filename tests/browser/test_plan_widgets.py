"""Plan mode in real JupyterLab (issue 13 item 4): the todo list updates in place as
write_todos changes it, a plan card is rejected with a reason and the revised plan
approved from the chat, and a plan card waiting across a kernel restart comes back on
a chat over the restored session, where Approve completes the run once."""

from __future__ import annotations

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"

SETUP = '''
import json
from pathlib import Path

import arknb as ark

EFFECTS = Path("plan_effects.log")
EFFECTS.unlink(missing_ok=True)

@ark.tool(read_only=True)
def read_logs(service: str) -> str:
    """Read a service's recent log lines."""
    return f"{service}: out of memory at 03:12"

@ark.tool
def restart_service(service: str) -> str:
    """Restart a service."""
    with EFFECTS.open("a") as f:
        f.write(f"restart {service}\\n")
    return f"{service} restarted"

def call(cid, tool_name, **arguments):
    return ark.ToolCall(id=cid, name=tool_name, arguments_json=json.dumps(arguments))

def plan(cid, *items):
    return call(cid, "write_todos", todos=[{"content": c, "status": s} for c, s in items])

SLOW = 0.15  # seconds per streamed chunk: the todo list visibly changes between turns
model = ark.ScriptedModel([
    ark.ScriptedTurn(text=["Looking ", "first."], tool_calls=[call("c1", "read_logs", service="api")]),
    ark.ScriptedTurn(text="My plan.", tool_calls=[plan("t1", ("Restart the api", "pending"))]),
    ark.ScriptedTurn(text="Revised.", tool_calls=[plan("t2", ("Check the memory", "pending"),
                                                       ("Restart the api", "pending"), ("Watch it", "pending"))]),
    ark.ScriptedTurn(text=["Checking ", "the ", "memory."], chunk_delay=SLOW,
                     tool_calls=[plan("t3", ("Check the memory", "completed"), ("Restart the api", "in_progress"),
                                      ("Watch it", "pending"))]),
    ark.ScriptedTurn(text=["Restarting ", "now."], chunk_delay=SLOW,
                     tool_calls=[call("c2", "restart_service", service="api")]),
    ark.ScriptedTurn(text=["Watching ", "it ", "for ", "a ", "while."], chunk_delay=SLOW,
                     tool_calls=[plan("t4", ("Check the memory", "completed"), ("Restart the api", "completed"),
                                      ("Watch it", "completed"))]),
    ark.ScriptedTurn(text="The api is back."),
])
runtime = ark.AgentRuntime(model, tools=[read_logs, restart_service], plan_mode=ark.PlanMode.REVIEW)
chat = ark.ChatWidget(runtime)
chat
'''

ROWS = """() => [...document.querySelectorAll("[data-testid='arknb-todos'] [data-testid='arknb-todo']")]
  .map((li) => li.dataset.status).join(',')"""


def test_reject_then_approve_a_plan_and_watch_the_todo_list(lab):
    notebook = lab.server.write_notebook("plan_review.ipynb", [SETUP, 'handle = runtime.start("The api is down.")'])
    lab.open(notebook)
    lab.run_cell(0)
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.run_cell(1)

    card = chat.get_by_test_id("arknb-plan-review")
    card.wait_for()
    expect(card.locator("[data-testid='arknb-plan-item'] .arknb-todo-text")).to_have_text(["Restart the api"])
    expect(chat.get_by_test_id("arknb-input-block")).to_contain_text("plan waits for your review")
    lab.screenshot("plan_card", locator=chat)
    card.get_by_test_id("arknb-plan-reason").fill("check the memory first, then watch it")
    card.get_by_test_id("arknb-plan-reject").click()

    # The model got the reason and proposed a revised plan: a new card, with three items.
    revised = chat.locator("[data-testid='arknb-plan-review'][data-state='live']")
    revised.locator("[data-testid='arknb-plan-item']", has_text="Watch it").wait_for()
    got = lab.kernel_exec("print(model.requests[2].messages[-1].text.splitlines()[0])").strip()
    assert got == "The reviewer rejected this plan. Reason: check the memory first, then watch it"
    assert lab.kernel_exec("print(runtime.state.plan)").strip() == "None"  # nothing applied on a rejection
    lab.screenshot("revised_plan_card", locator=chat)
    revised.get_by_test_id("arknb-plan-approve").click()

    # The todo list appears and changes in place as write_todos runs.
    todos = chat.get_by_test_id("arknb-todos")
    todos.wait_for()
    lab.page.wait_for_function(f"() => ({ROWS})() === 'completed,in_progress,pending'", timeout=60_000)
    lab.page.evaluate("() => { window.__row = document.querySelector(\"[data-testid='arknb-todo']\"); }")
    expect(todos.get_by_test_id("arknb-todos-approval")).to_have_text("approved")
    lab.screenshot("todo_list_in_progress", locator=chat)
    lab.page.wait_for_function(f"() => ({ROWS})() === 'completed,completed,completed'", timeout=60_000)
    assert lab.page.evaluate("() => window.__row === document.querySelector(\"[data-testid='arknb-todo']\")")
    chat.locator("[data-testid='arknb-assistant-text']", has_text="The api is back.").wait_for()
    expect(todos.get_by_test_id("arknb-todos-counts")).to_have_text("3 of 3 done")
    expect(chat.get_by_test_id("arknb-plan-review")).to_have_count(0)
    lab.screenshot("todo_list_done", locator=chat)
    assert lab.kernel_exec("print(EFFECTS.read_text())").strip() == "restart api"  # ran once, after approval


PAUSE = '''
import json
import arknb as ark

STORE = ark.FileStateStorage(".arknb/plan_restart")

@ark.tool
def restart_service(service: str) -> str:
    """Restart a service."""
    with open("restart_effects.log", "a") as f:
        f.write(f"restart {service}\\n")
    return f"{service} restarted"

todos = [{"content": "Restart the api", "status": "pending"}]
first = ark.AgentRuntime(ark.ScriptedModel([ark.ScriptedTurn(text="My plan.", tool_calls=[
    ark.ToolCall(id="t1", name="write_todos", arguments_json=json.dumps({"todos": todos}))])]),
    tools=[restart_service], storage=STORE, session_id="plan-restart", plan_mode="review", fresh=True)
import os
if os.path.exists("restart_effects.log"):
    os.remove("restart_effects.log")
result = await first.run("Restart the api.")
print(result.stop_reason)
'''

AFTER_RESTART = '''
import json
import arknb as ark

@ark.tool
def restart_service(service: str) -> str:
    """Restart a service."""
    with open("restart_effects.log", "a") as f:
        f.write(f"restart {service}\\n")
    return f"{service} restarted"

model = ark.ScriptedModel([
    ark.ScriptedTurn(tool_calls=[ark.ToolCall(id="c1", name="restart_service", arguments_json='{"service": "api"}')]),
    "Restarted.",
])
restored = ark.AgentRuntime(model, tools=[restart_service], storage=ark.FileStateStorage(".arknb/plan_restart"),
                            session_id="plan-restart", plan_mode="review")
ark.ChatWidget(restored)
'''


def test_a_plan_card_comes_back_after_a_kernel_restart_and_approve_runs_once(lab):
    notebook = lab.server.write_notebook("plan_restart.ipynb", [PAUSE, AFTER_RESTART])
    lab.open(notebook)
    assert lab.run_cell(0).strip() == "awaiting_approval"
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab.wait_idle()
    lab.run_cell(1)  # a new kernel: a chat on a runtime for the saved session loads it

    chat = lab.page.locator(CHAT).last
    card = chat.locator("[data-testid='arknb-plan-review'][data-state='live']")
    card.wait_for()
    expect(card.locator("[data-testid='arknb-plan-item'] .arknb-todo-text")).to_have_text(["Restart the api"])
    lab.screenshot("plan_card_after_restart", locator=chat)
    card.get_by_test_id("arknb-plan-approve").click()

    chat.locator("[data-testid='arknb-assistant-text']", has_text="Restarted.").wait_for(timeout=60_000)
    todos = chat.get_by_test_id("arknb-todos")
    todos.wait_for()
    expect(todos.locator("[data-testid='arknb-todo'] .arknb-todo-text")).to_have_text(["Restart the api"])
    expect(chat.get_by_test_id("arknb-plan-review")).to_have_count(0)
    assert lab.kernel_exec("print(open('restart_effects.log').read())").strip() == "restart api"
    lab.screenshot("approved_after_restart", locator=chat)


TIMELINE = '''
import json
import arknb as ark

def call(cid, tool_name, **arguments):
    return ark.ToolCall(id=cid, name=tool_name, arguments_json=json.dumps(arguments))

skills = [ark.Skill("haiku", "Answer as a haiku.", "Write every answer as a 5-7-5 haiku.")]
model = ark.ScriptedModel([
    ark.ScriptedTurn(tool_calls=[call("t1", "write_todos", todos=[{"content": "Pick a topic"},
                                                                   {"content": "Write the haiku"}])]),
    ark.ScriptedTurn(tool_calls=[call("s1", "activate_skill", name="haiku")]),
    ark.ScriptedTurn(tool_calls=[call("t2", "write_todos", todos=[{"content": "Pick a topic", "status": "completed"},
                                                                   {"content": "Write the haiku", "status": "completed"}])]),
    "An old silent pond / a frog jumps into the pond / splash! silence again.",
])
runtime = ark.AgentRuntime(model, plan_mode="auto", skills=skills)
timeline = ark.TimelineWidget(runtime)
result = await runtime.run("A poem about a pond, please.")
print(result.stop_reason)
timeline
'''


def test_the_timeline_marks_plan_updates_and_skill_activations(lab):
    notebook = lab.server.write_notebook("plan_timeline.ipynb", [TIMELINE])
    lab.open(notebook)
    assert lab.run_cell(0).strip().startswith("completed")
    timeline = lab.page.locator("[data-testid='arknb-timeline']").first
    timeline.wait_for()
    marks = timeline.locator("[data-testid='arknb-span-mark']")
    marks.nth(2).wait_for()
    expect(marks).to_have_text(["plan v1", "skill haiku", "plan v2 (statuses)"])
    assert marks.evaluate_all("(ms) => ms.map((m) => m.dataset.mark)") == ["plan", "skill", "plan"]
    # The spans the marks sit on are the tool calls that made them.
    owners = marks.evaluate_all("(ms) => ms.map((m) => m.closest(\"[data-testid='arknb-span']\").dataset.kind)")
    assert owners == ["tool", "tool", "tool"]
    timeline.get_by_test_id("arknb-timeline-type").select_option("plan.updated")
    rows = timeline.locator("[data-testid='arknb-timeline-row'][data-mark='plan']")
    rows.nth(1).wait_for()
    expect(rows.locator(".arknb-row-summary")).to_have_text(
        ["plan v1 · 2 items · 0 done · new plan", "plan v2 · 2 items · 2 done · statuses only"])
    timeline.get_by_test_id("arknb-timeline-type").select_option("")
    timeline.locator("[data-testid='arknb-timeline-row'][data-mark='skill']").first.wait_for()
    lab.screenshot("timeline_marks", locator=timeline)
