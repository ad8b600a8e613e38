"""Sub-agents and compression in real JupyterLab (issue 14): the child's approval card is
approved from the parent's chat, the child's work is a collapsible card inside the
delegate_task card, and the timeline nests the child's spans under that call
(collapsible) and marks compressions. Screenshots go to test-results/."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

CHAT = "[data-testid='arknb-chat'][data-ready='true']"
TIMELINE = "[data-testid='arknb-timeline'][data-ready='true']"


def test_a_sub_agents_approval_is_approved_from_the_parent_chat(lab):
    lab.open("09_memory_and_subagents.ipynb")
    lab.run_cell_containing("import tempfile")
    lab.run_cell_containing("def clear_cache")
    lab.run_cell_containing("chat = ark.ChatWidget(ops)")
    chat = lab.page.locator(CHAT).first
    chat.wait_for()
    lab.kernel_exec('handle = ops.start("The build server is out of disk space.")')

    card = chat.locator("[data-testid='arknb-approval'][data-approval-id^='cleaner/']")
    card.first.wait_for()
    expect(card).to_have_count(1)
    expect(card.first).to_contain_text("clear_cache")
    expect(card.first.get_by_test_id("arknb-approval-source")).to_have_text("asked by sub-agent cleaner")
    delegate = chat.locator("[data-testid='arknb-tool-card'][data-call-id='d1']")
    sub = delegate.locator("[data-testid='arknb-subagent']")
    sub.wait_for()
    # The card (a trait) shows at once; the sub-agent's status comes with the transcript's
    # next deltas, a frame or more later.
    expect(sub).to_have_attribute("data-session", "ops.cleaner.1")
    expect(sub).to_have_attribute("data-status", "awaiting_approval")
    assert sub.evaluate("d => d.open")  # open while the child works
    sub.locator("[data-testid='arknb-sub-tool'][data-status='awaiting_approval']",
                has_text="clear_cache").wait_for()
    lab.screenshot("child_approval_in_parent_chat", locator=chat)

    card.first.get_by_test_id("arknb-approve").click()
    chat.locator("[data-testid='arknb-assistant-text']",
                 has_text="Done: the cleaner freed 1.2 GB in /var/cache/build.").wait_for()
    expect(card).to_have_count(0)
    lab.page.wait_for_function("() => document.querySelector(\"[data-testid='arknb-chat']\").dataset.status"
                               " === 'completed'")
    done = delegate.locator("[data-testid='arknb-subagent'][data-status='completed']")
    done.wait_for()
    done.locator("[data-testid='arknb-sub-tool'][data-status='done']", has_text="clear_cache").wait_for()
    expect(delegate.get_by_test_id("arknb-tool-result").first).to_contain_text("1.2 GB freed")
    # Collapsible: the person's choice sticks across updates.
    done.locator("summary").click()
    assert not done.evaluate("d => d.open")
    lab.screenshot("child_work_done_collapsed", locator=chat)
    assert lab.kernel_exec("print(len(cleared))").strip() == "1"


TIMELINE_CELLS = [
    """
import json
import arknb as ark

def call(call_id, name, **arguments):
    return ark.ToolCall(id=call_id, name=name, arguments_json=json.dumps(arguments))

@ark.tool(risk="dangerous")
def clear_cache(path: str) -> str:
    \"\"\"Delete a cache folder.\"\"\"
    return f"cleared {path}"

storage = ark.MemoryStateStorage()
child_model = ark.ScriptedModel([ark.ScriptedTurn(tool_calls=[call("k1", "clear_cache", path="/tmp/c")]),
                                 "Cleared."])
cleaner = ark.SubAgent("cleaner", "Clears caches.", lambda sid: ark.AgentRuntime(
    child_model, tools=[clear_cache], storage=storage, session_id=sid))
model = ark.ScriptedModel(["First answer. " + "More. " * 60, "Second answer. " + "More. " * 60,
                           ark.ScriptedTurn(tool_calls=[call("d1", "delegate_task", agent="cleaner",
                                                             task="Clear /tmp/c.")]),
                           "All done."])
runtime = ark.AgentRuntime(model, storage=storage, session_id="tl", subagents=[cleaner],
                           compressor=ark.ContextCompressor(500, keep_last=2,
                                                            summarize=lambda m: "earlier questions"))
""",
    "ark.TimelineWidget(runtime)",
]


def test_the_timeline_nests_a_child_run_under_its_delegate_call_and_marks_compressions(lab):
    notebook = lab.server.write_notebook("memory_timeline.ipynb", TIMELINE_CELLS)
    lab.open(notebook)
    lab.run_cell(0)
    lab.run_cell(1)
    timeline = lab.page.locator(TIMELINE).first
    timeline.wait_for()
    lab.kernel_exec('await runtime.run("question one " + "words " * 80)\n'
                    'await runtime.run("question two " + "words " * 80)\n'
                    'paused = await runtime.run("clear the cache")\n'
                    'await runtime.controller.approve(runtime.controller.list_pending_approvals()[0].approval_id)\n'
                    'result = await runtime.current_run\n'
                    'print(result.stop_reason)', timeout=60)
    spans = timeline.locator("[data-testid='arknb-span']")
    timeline.locator("[data-testid='arknb-span'][data-kind='compression']").first.wait_for()
    # The child's run sits under the delegate_task span, its clear_cache call inside it; the
    # call ran twice (it waited for the child's approval, then ran on in the parent's resumed
    # run), and the child's run that continued after the approval sits under the second.
    delegates = timeline.locator("[data-testid='arknb-span'][data-kind='tool']", has_text="delegate_task d1")
    delegate = delegates.first
    delegate.wait_for()
    delegates.nth(1).wait_for()
    depth = int(delegate.get_attribute("data-depth"))
    child_run = timeline.locator(f"[data-testid='arknb-span'][data-kind='run'][data-depth='{depth + 1}']")
    child_run.first.wait_for()
    # The second attempt's child run: the continuation, one level under that attempt.
    later = int(delegates.nth(1).get_attribute("data-depth"))
    timeline.locator(f"[data-testid='arknb-span'][data-kind='run'][data-depth='{later + 1}']",
                     has_text="resumed").first.wait_for()
    clears = timeline.locator("[data-testid='arknb-span'][data-kind='tool']", has_text="clear_cache")
    inner = clears.first
    inner.wait_for()
    clears.nth(1).wait_for()
    assert int(inner.get_attribute("data-depth")) > depth + 1
    inner.scroll_into_view_if_needed()
    lab.screenshot("timeline_nested", locator=timeline)
    before = spans.count()
    expect(delegate).to_have_attribute("aria-expanded", "true")
    delegate.get_by_test_id("arknb-span-toggle").click()
    lab.page.wait_for_function(
        "(n) => document.querySelectorAll(\"[data-testid='arknb-span']\").length < n", arg=before)
    # Folding the first attempt hides the child's first run (its deferred clear_cache); the
    # approved clear_cache stays, under the second attempt, until that one is folded too.
    expect(clears).to_have_count(1)
    expect(delegate).to_have_attribute("aria-expanded", "false")
    second = delegates.nth(1)
    second.get_by_test_id("arknb-span-toggle").click()
    lab.page.wait_for_function(
        "() => !document.querySelectorAll(\"[data-testid='arknb-span'][data-kind='tool']\").length || "
        "![...document.querySelectorAll(\"[data-testid='arknb-span'][data-kind='tool']\")]"
        ".some((s) => s.textContent.includes('clear_cache'))")
    expect(clears).to_have_count(0)
    second.get_by_test_id("arknb-span-toggle").click()
    clears.first.wait_for()
    lab.screenshot("timeline_collapsed", locator=timeline)
    # From the keyboard: → unfolds the focused span again.
    timeline.locator("[data-testid='arknb-span'][data-kind='tool']", has_text="delegate_task d1").first.press("ArrowRight")
    lab.page.wait_for_function(
        "(n) => document.querySelectorAll(\"[data-testid='arknb-span']\").length === n", arg=before)


REPO = Path(__file__).resolve().parents[2]
SUBAGENT_IN_DOUBT = f'''
import shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
import arknb as ark
from tests.memory._subagent_kit import effects, open_store, uploader
from tests.runtime._approval_kit import run_until_line

# A parent delegated an upload; the child's process was SIGKILLed while the upload ran.
folder = Path(tempfile.mkdtemp(prefix="arknb-subagent-doubt-"))
run_until_line(Path({str(REPO)!r}) / "tests" / "memory" / "_subagent_indoubt_child.py", str(folder), "sqlite",
               prefix="UPLOADING")
storage = open_store("sqlite", folder)
parent = await ark.AgentRuntime.restore("boss", storage=storage, model=ark.ScriptedModel(["The report is up."]),
                                        subagents=[uploader(folder, storage, ["Uploaded report.pdf."])])
# Restored, the parent is paused for the child's in-doubt call at once: nothing to resume.
print(parent.current_run, parent.state.last_stop_reason)
'''


def test_a_sub_agents_in_doubt_call_is_marked_done_from_the_parent_chat(lab):
    notebook = lab.server.write_notebook("subagent_in_doubt.ipynb",
                                         [SUBAGENT_IN_DOUBT, "chat = ark.ChatWidget(parent)\nchat"])
    lab.open(notebook)
    try:
        assert lab.run_cell(0, timeout=120).strip() == "None awaiting_approval"
        lab.run_cell(1)
        chat = lab.page.locator(CHAT).first
        chat.wait_for()
        card = chat.locator("[data-testid='arknb-in-doubt'][data-approval-id^='uploader/']")
        card.wait_for()
        expect(card).to_contain_text("upload")
        assert card.get_by_test_id("arknb-approve").count() == 0  # rerun, mark done or mark failed only
        expect(card.get_by_test_id("arknb-approval-source")).to_have_text("asked by sub-agent uploader")
        expect(chat.get_by_test_id("arknb-input-block")).to_contain_text("may or may not have run")
        lab.screenshot("subagent_in_doubt_card", locator=chat)
        card.get_by_test_id("arknb-in-doubt-text").fill("uploaded (the bucket has it)")
        card.get_by_test_id("arknb-mark-done").click()
        chat.locator("[data-testid='arknb-assistant-text']", has_text="The report is up.").wait_for()
        expect(card).to_have_count(0)
        lab.page.wait_for_function("() => document.querySelector(\"[data-testid='arknb-chat']\").dataset.status"
                                   " === 'completed'")
        out = lab.kernel_exec("print(effects(folder, 'uploads.log'))\n"
                              "print([m.text for m in parent.state.history if m.role == 'tool'])")
        assert "['upload report.pdf']" in out  # it never ran again
        assert "['Uploaded report.pdf.']" in out
    finally:
        lab.kernel_exec("await parent.aclose()\nawait storage.aclose()\nshutil.rmtree(folder, ignore_errors=True)")
