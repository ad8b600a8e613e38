"""Notebook 08_planning_and_skills.ipynb: its cells, in order."""

from __future__ import annotations

from ._cells import code, md

NAME = "08_planning_and_skills.ipynb"

CELLS = [
    md("""
# 08 · Planning with review, and skills

Two capabilities that plug into the runtime as extensions:

* **Plan mode.** With `plan_mode=ark.PlanMode.REVIEW` the model keeps a todo list with
  the built-in `write_todos` tool, and a new plan waits for *your* approval before the
  agent acts. Until a plan is approved only tools declared `@ark.tool(read_only=True)`
  run, so the model looks around first. The pause works exactly like a tool approval:
  saved first, then shown (a plan card in the chat), and it survives a kernel restart.
* **Skills.** A skill is a set of instructions (and maybe tools) the model gets always,
  or when it asks for it with the built-in `activate_skill` tool. Skills can live in
  folders with a `SKILL.md` file: this notebook loads the ones in `skills/` next to it.

Everything runs on the scripted model: no API key needed.
"""),
    code("""
import time

import arknb as ark


@ark.tool(read_only=True)
def read_logs(service: str) -> str:
    \"\"\"Read the recent log lines of a service.\"\"\"
    time.sleep(0.1)  # the tools take a moment, so the timeline's bars have widths
    return f"{service}: 03:12 out of memory (heap 2.0 GB of 2.0 GB); 03:13 requests failing"


@ark.tool(read_only=True)
def memory_use(service: str) -> str:
    \"\"\"How much memory a service uses now, and its limit.\"\"\"
    return f"{service}: 1.9 GB of 2.0 GB"


@ark.tool
def restart_service(service: str, memory_gb: int = 2) -> str:
    \"\"\"Restart a service, optionally with a new memory limit.\"\"\"
    time.sleep(0.3)
    return f"{service} restarted with {memory_gb} GB"


def call(call_id, tool_name, index=0, **arguments):
    import json
    return ark.ToolCall(id=call_id, name=tool_name, arguments_json=json.dumps(arguments), index=index)


def plan(call_id, *items):
    todos = [{"content": c, "status": s} for c, s in items]
    return call(call_id, "write_todos", todos=todos)
"""),
    md("""
## Skills from a folder

`ark.load_skills("skills")` reads every sub-folder holding a `SKILL.md`: YAML front
matter with `name` and `description`, the body as instructions, and an optional
`tools.py` whose `@ark.tool` functions come with the skill. Nothing raises for a broken
skill: the report lists what loaded and what did not, and why.
"""),
    code("""
skills = ark.load_skills("skills")
skills
"""),
    code("""
print(open("skills/incident-report/SKILL.md").read())
"""),
    md("""
`plain-language` says `always_on: true`, so it joins the system prompt from the first
call. `incident-report` is on demand: the model sees its name and description in the
`activate_skill` tool and activates it when the task matches.

## The scripted model

The model below first tries to restart the service straight away, proposes a plan,
gets it rejected, proposes a better one, and once it is approved carries it out and
writes a report with the skill.
"""),
    code("""
model = ark.ScriptedModel([
    # 1: acts before planning: the restart is held back, the read-only log read runs
    ark.ScriptedTurn(text="Let me restart it and look at the logs.",
                     tool_calls=[call("c1", "restart_service", service="api"), call("c2", "read_logs", 1, service="api")]),
    # 2: a first plan (the run pauses for review)
    ark.ScriptedTurn(text="Here is my plan.",
                     tool_calls=[plan("t1", ("Restart the api service", "pending"))]),
    # 3: after the rejection, a revised plan (pauses again)
    ark.ScriptedTurn(text="Revised plan.",
                     tool_calls=[plan("t2", ("Check the memory use", "pending"),
                                      ("Restart the api with 4 GB", "pending"),
                                      ("Write an incident report", "pending"))]),
    # 4-6: carry it out, keeping the statuses current (no new review for statuses)
    ark.ScriptedTurn(tool_calls=[call("c3", "memory_use", service="api")]),
    ark.ScriptedTurn(tool_calls=[call("c4", "restart_service", service="api", memory_gb=4)]),
    ark.ScriptedTurn(tool_calls=[plan("t3", ("Check the memory use", "completed"),
                                      ("Restart the api with 4 GB", "completed"),
                                      ("Write an incident report", "in_progress"))]),
    # 7-9: the on-demand skill, its tool, the last status update
    ark.ScriptedTurn(tool_calls=[call("s1", "activate_skill", name="incident-report")]),
    ark.ScriptedTurn(tool_calls=[call("s2", "incident_template", service="api")]),
    ark.ScriptedTurn(tool_calls=[plan("t4", ("Check the memory use", "completed"),
                                      ("Restart the api with 4 GB", "completed"),
                                      ("Write an incident report", "completed"))]),
    ark.ScriptedTurn(text="**What happened** The api ran out of memory at 03:12. **Why** Its heap hit the 2 GB "
                          "limit. **What we did** Restarted it with 4 GB."),
])
runtime = ark.AgentRuntime(model, tools=[read_logs, memory_use, restart_service],
                           plan_mode=ark.PlanMode.REVIEW, skills=skills,
                           system_prompt="You keep services running.")
events = []
unsubscribe = runtime.bus.subscribe(ark.EventTypes.ANY, events.append)
"""),
    md("""
The chat shows the todo list as it changes and a plan card with **Approve** and
**Reject** (with a reason) when a plan waits. The cells below decide in code what the
card's buttons decide, so the notebook also runs top to bottom without clicking; each
decides only what still waits, so clicking first and running the cell after is fine too.
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.ChatWidget(runtime)
"""),
    code("""
result = await runtime.run("The api service is down. Fix it.")
print("stop_reason:", result.stop_reason)
for event in events:
    if event.type == ark.EventTypes.TOOL_DENIED:
        print("held back:", event.payload["call"]["name"], "-", event.payload["reason"])
"""),
    md("""
The restart was refused with "plan not approved yet" (a `tool.denied` event), the log
read ran, and the plan now waits for review:
"""),
    code("""
def show_review():
    review = runtime.controller.get_pending_plan_review()
    if review is None:
        print("no plan waits for review")
        return
    print("plan version", review.plan.version, "waits for review:")
    for item in review.plan.items:
        print(f"  [{item.status}] {item.content}")


show_review()
"""),
    md("""
While a plan waits, new input is refused: the review must be decided first.
"""),
    code("""
if runtime.controller.get_pending_plan_review() is not None:
    try:
        runtime.start("Something else")
    except ark.ArkError as error:
        print(error.layer, error.code)
"""),
    md("""
## Reject with a reason

The model gets the rejection as the `write_todos` result, with your reason, and
proposes a revised plan, version 2, which waits for review in turn. (Clicked **Reject**
on the card already? Then version 1 no longer waits, and this cell rejects nothing.)
"""),
    code("""
review = runtime.controller.get_pending_plan_review()
if review is not None and review.plan.version == 1:  # the first plan still waits
    decision = await runtime.controller.reject_plan("Check the memory use first, and raise the limit.")
    print("ok:", decision.ok, "| decision:", decision.decision)
if runtime.current_run is not None:
    await runtime.current_run
print("stop_reason:", runtime.last_result.stop_reason)
answer = next((m.text for m in runtime.history if m.role == "tool" and m.tool_call_id == "t1"), "(nothing yet)")
print("the model read:", answer)
"""),
    code("""
show_review()
"""),
    md("""
## Approve

Approving lets the run go on: the plan is saved as `state.plan`, the other tools run
from now on, and status updates of the approved items need no new review.
"""),
    code("""
if runtime.controller.get_pending_plan_review() is not None:  # approved on the card already? nothing waits
    decision = await runtime.controller.approve_plan()
if runtime.current_run is not None:
    await runtime.current_run
result = runtime.last_result
print("stop_reason:", result.stop_reason)
print(result.final_message.text)
"""),
    code("""
plan_now = runtime.state.plan
print("plan version", plan_now.version)
for item in plan_now.items:
    print(f"[{item.status}] {item.content}")
print("active skills:", runtime.state.active_skills)
"""),
    md("""
What happened, in events: every plan change is a `plan.updated`, each review a
`plan.review_required` (published only after the pause was saved) and a
`plan.review_resolved`, and the skill activation a `skill.activated`.
"""),
    code("""
watched = (ark.EventTypes.PLAN_UPDATED, ark.EventTypes.PLAN_REVIEW_REQUIRED,
           ark.EventTypes.PLAN_REVIEW_RESOLVED, ark.EventTypes.SKILL_ACTIVATED)
for event in events:
    if event.type in watched:
        payload = event.payload
        detail = payload.get("decision") or payload.get("change") or payload.get("name") or ""
        version = (payload.get("plan") or {}).get("version", "")
        print(f"{event.type:22} {detail:16} {version}")
"""),
    code("""
# NBVAL_IGNORE_OUTPUT
ark.TimelineWidget(events)
"""),
    md("""
## How it fits together

`plan_mode=` and `skills=` install *extensions*: each contributes tools, a section of
the system prompt, hooks and a slice of the saved state (`state.extensions["plan"]`,
`state.extensions["skills"]`), through one seam you can use for your own capabilities:
`ark.AgentRuntime(..., extensions=[MyExtension()])` with a subclass of `ark.Extension`.
"""),
    code("""
for extension in runtime.extensions:
    print(extension.name, "->", sorted(runtime.state.extensions.get(extension.name, {})))
system = model.requests[-1].messages[0].text
print("sections of the last system prompt:", [line for line in system.splitlines() if line.startswith("## ")])
"""),
]
