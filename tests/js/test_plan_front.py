"""The chat's plan parts with a fake model (issue 13 item 4): the todo list updated in
place, and the plan-review card's Approve / Reject (with a reason)."""

from .test_chat_front import base_state

PLAN_V1 = {"version": 1, "items": [{"content": "Read the logs", "status": "pending"},
                                   {"content": "Restart the service", "status": "pending"}],
           "approved": True, "mode": "review"}


def review_card(aid="ap-plan", previous=None, **kw):
    plan = {"version": 2 if previous else 1, "items": [
        {"content": "Read the logs", "status": "pending"}, {"content": "Check memory", "status": "pending"},
        {"content": "Restart the service", "status": "pending"}]}
    return {"approval_id": aid, "call_id": "t1", "tool_name": "write_todos", "arguments": "{}", "risk_level": "safe",
            "reason": "a new plan waits for review", "decision": "pending", "deny_reason": None, "deciding": False,
            "error": None, "note": None, "live": True, "kind": "plan",
            "detail": {"plan": plan, "previous": previous}, **kw}


ROWS = """() => [...document.querySelectorAll("[data-testid='arknb-todo']")].map(
  (li) => [li.querySelector('.arknb-todo-text').textContent, li.dataset.status])"""


def test_the_todo_list_shows_each_status_and_updates_in_place(harness):
    harness.mount("chat", base_state(plan={}))
    todos = harness.page.locator("[data-testid='arknb-todos']")
    assert todos.is_hidden()  # no plan yet

    harness.set("plan", PLAN_V1)
    assert todos.is_visible()
    assert harness.page.evaluate(ROWS) == [["Read the logs", "pending"], ["Restart the service", "pending"]]
    assert harness.page.locator("[data-testid='arknb-todos-title']").text_content() == "Plan · version 1"
    assert harness.page.locator("[data-testid='arknb-todos-approval']").text_content() == "approved"
    harness.page.evaluate("() => { window.firstRow = document.querySelector(\"[data-testid='arknb-todo']\"); }")

    harness.set("plan", {**PLAN_V1, "version": 2, "items": [
        {"content": "Read the logs", "status": "completed"}, {"content": "Restart the service", "status": "in_progress"},
        {"content": "Write a note", "status": "pending"}]})

    assert harness.page.evaluate(ROWS) == [["Read the logs", "completed"], ["Restart the service", "in_progress"],
                                           ["Write a note", "pending"]]
    # The same row node, changed in place (no rebuilt list, no lost scroll or focus).
    assert harness.page.evaluate(
        "() => window.firstRow === document.querySelector(\"[data-testid='arknb-todo']\")") is True
    assert harness.page.locator("[data-testid='arknb-todos-counts']").text_content() == "1 of 3 done"
    marks = harness.page.evaluate(
        "() => [...document.querySelectorAll(\"[data-testid='arknb-todo'] .arknb-todo-status\")].map(e => e.textContent)")
    assert marks == ["completed", "in progress", "pending"]


def test_the_plan_review_card_approves_by_its_own_id(harness):
    harness.mount("chat", base_state(approvals=[review_card()], status="awaiting_approval"))
    card = harness.page.locator("[data-testid='arknb-plan-review']")
    items = card.locator("[data-testid='arknb-plan-item'] .arknb-todo-text").all_text_contents()
    assert items == ["Read the logs", "Check memory", "Restart the service"]
    assert card.locator("[data-testid='arknb-approve']").count() == 0  # not a tool card

    card.locator("[data-testid='arknb-plan-approve']").click()

    sent = [m for m in harness.sent() if m["type"] != "hello"]
    assert [(m["type"], m["approval_id"]) for m in sent] == [("approve", "ap-plan")]
    assert card.get_attribute("data-deciding") == "true"
    assert card.locator("[data-testid='arknb-plan-approve']").count() == 0  # one click, one request


def test_the_plan_review_card_rejects_with_its_reason_and_marks_the_change(harness):
    previous = {"version": 1, "items": [{"content": "Read the logs", "status": "completed"},
                                        {"content": "Restart now", "status": "pending"}]}
    harness.mount("chat", base_state(approvals=[review_card(previous=previous)], status="awaiting_approval"))
    card = harness.page.locator("[data-testid='arknb-plan-review']")
    changes = card.evaluate("(c) => [...c.querySelectorAll(\"[data-testid='arknb-plan-item']\")].map("
                            "(li) => [li.querySelector('.arknb-todo-text').textContent, li.dataset.change])")
    assert changes == [["Read the logs", "same"], ["Check memory", "added"], ["Restart the service", "added"],
                       ["Restart now", "removed"]]
    assert card.locator("[data-change='added'] .arknb-badge-new").count() == 2

    card.locator("[data-testid='arknb-plan-reason']").fill("restart with more memory")
    card.locator("[data-testid='arknb-plan-reject']").click()

    sent = [m for m in harness.sent() if m["type"] != "hello"]
    assert [(m["type"], m["approval_id"], m.get("reason")) for m in sent] == [
        ("deny", "ap-plan", "restart with more memory")]


def test_a_decided_or_dead_plan_card_has_no_buttons(harness):
    harness.mount("chat", base_state(approvals=[review_card(decision="approved", live=False)]))
    card = harness.page.locator("[data-testid='arknb-plan-review']")
    assert card.locator("[data-testid='arknb-plan-decision']").text_content() == "✓ plan approved"
    assert card.locator("[data-testid='arknb-plan-approve']").count() == 0
    harness.set("approvals", [review_card(live=False, note="another runtime changed this session")])
    assert card.locator("[data-testid='arknb-plan-approve']").is_disabled()
