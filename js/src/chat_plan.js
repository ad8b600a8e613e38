// The chat's plan parts (arknb/widgets/_chat_plan.py, DESIGN §14): the todo list the
// model keeps with write_todos, shown live and updated in place, and the card of a plan
// waiting for review (a pending approval item of kind "plan").
import { h } from "./lib/dom.js";

const MARK = { pending: "○", in_progress: "◐", completed: "●", cancelled: "⊘" };
const LABEL = { pending: "pending", in_progress: "in progress", completed: "completed", cancelled: "cancelled" };

/** The todo panel: `render(plan)` updates the rows in place (a row per item, by position). */
export function todoPanel() {
  const title = h("span", { class: "arknb-todos-title", testid: "arknb-todos-title" });
  const badge = h("span", { class: "arknb-badge", testid: "arknb-todos-approval" });
  const counts = h("span", { class: "arknb-muted", testid: "arknb-todos-counts" });
  const list = h("ol", { class: "arknb-todo-list" });
  const root = h("details", { class: "arknb-todos", testid: "arknb-todos", open: true, "aria-label": "Plan" },
    h("summary", { class: "arknb-card-head" }, title, badge, counts), list);
  const rows = [];

  function row() {
    const mark = h("span", { class: "arknb-todo-mark", "aria-hidden": "true" });
    const text = h("span", { class: "arknb-todo-text" });
    const status = h("span", { class: "arknb-todo-status arknb-muted" });
    const li = h("li", { class: "arknb-todo", testid: "arknb-todo" }, mark, text, status);
    return { li, mark, text, status };
  }

  function render(plan) {
    const items = (plan && plan.items) || [];
    root.hidden = items.length === 0;
    root.dataset.version = String((plan && plan.version) || "");
    title.textContent = `Plan${plan && plan.version ? ` · version ${plan.version}` : ""}`;
    const reviewed = plan && plan.mode === "review";
    badge.hidden = !(reviewed || (plan && plan.approved));
    badge.textContent = plan && plan.approved ? "approved" : "not approved";
    badge.className = `arknb-badge ${plan && plan.approved ? "arknb-badge-approved" : "arknb-badge-awaiting_approval"}`;
    const done = items.filter((i) => i.status === "completed").length;
    counts.textContent = `${done} of ${items.length} done`;
    while (rows.length < items.length) { const r = row(); rows.push(r); list.append(r.li); }
    while (rows.length > items.length) rows.pop().li.remove();
    items.forEach((item, i) => {
      const r = rows[i];
      const status = LABEL[item.status] ? item.status : "pending";
      if (r.li.dataset.status !== status) {   // only what changed is touched: the row stays the same node
        r.li.dataset.status = status;
        r.mark.textContent = MARK[status];
        r.status.textContent = LABEL[status];
      }
      if (r.text.textContent !== item.content) r.text.textContent = item.content;
    });
  }

  return { root, render };
}

/** The proposed plan of a review, each item marked new when the plan it replaces lacked it,
 *  and the replaced plan's items that are gone. */
function proposal(detail) {
  const plan = (detail && detail.plan) || { items: [] };
  const previous = (detail && detail.previous) || null;
  const before = new Set(((previous && previous.items) || []).map((i) => i.content));
  const after = new Set((plan.items || []).map((i) => i.content));
  const rows = (plan.items || []).map((item) => h("li", {
    class: "arknb-todo", testid: "arknb-plan-item", "data-status": item.status || "pending",
    "data-change": previous && !before.has(item.content) ? "added" : "same" },
  h("span", { class: "arknb-todo-mark", "aria-hidden": "true" }, MARK[item.status] || MARK.pending),
  h("span", { class: "arknb-todo-text" }, item.content),
  previous && !before.has(item.content) ? h("span", { class: "arknb-badge arknb-badge-new" }, "new") : null));
  const gone = ((previous && previous.items) || []).filter((i) => !after.has(i.content)).map((item) =>
    h("li", { class: "arknb-todo", testid: "arknb-plan-item", "data-change": "removed" },
      h("span", { class: "arknb-todo-mark", "aria-hidden": "true" }, "✕"),
      h("del", { class: "arknb-todo-text" }, item.content)));
  return h("ol", { class: "arknb-todo-list" }, rows, gone);
}

/**
 * A plan-review card. `opts`: {usable, busy, decision, error, note, readOnly, onApprove(),
 * onReject(reason)}. Its buttons decide the review's own item (its approval id), so a card
 * left over from another batch can never decide a plan proposed later.
 */
export function planReviewCard(a, opts) {
  const version = a.detail && a.detail.plan && a.detail.plan.version;
  const reason = h("input", { class: "arknb-reason", testid: "arknb-plan-reason", type: "text",
    placeholder: "what to change (sent to the model)", "aria-label": "Reason for rejecting the plan",
    disabled: !opts.usable });
  const approve = h("button", { class: "arknb-btn arknb-btn-primary", testid: "arknb-plan-approve", type: "button",
    disabled: !opts.usable }, "Approve plan");
  const reject = h("button", { class: "arknb-btn arknb-btn-danger", testid: "arknb-plan-reject", type: "button",
    disabled: !opts.usable }, "Reject");
  approve.addEventListener("click", () => opts.onApprove());
  reject.addEventListener("click", () => opts.onReject(reason.value.trim()));
  reason.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); opts.onReject(reason.value.trim()); }
  });
  let actions;
  if (opts.readOnly) actions = h("div", { class: "arknb-muted" }, "waiting for review (read-only replay)");
  else if (opts.decision) {
    actions = h("div", { class: `arknb-decision arknb-decision-${opts.decision}`, testid: "arknb-plan-decision" },
      opts.decision === "approved" ? "✓ plan approved" : opts.decision === "denied" ? "✗ plan rejected" : opts.decision,
      opts.note ? h("span", { class: "arknb-muted" }, ` — ${opts.note}`) : null);
  } else if (opts.busy) {
    actions = h("span", { class: "arknb-muted", testid: "arknb-approval-deciding" }, "deciding…");
  } else {
    actions = h("div", { class: "arknb-approval-actions" }, approve, reason, reject,
      !opts.usable && opts.note ? h("span", { class: "arknb-muted" }, opts.note) : null);
  }
  const previous = a.detail && a.detail.previous;
  return h("div", { class: "arknb-card arknb-approval arknb-plan-review", testid: "arknb-plan-review",
    "data-approval-id": a.approval_id, "data-deciding": String(!!opts.busy), "data-state": opts.state, role: "group",
    "aria-label": "A plan waits for your review" },
  h("div", { class: "arknb-card-head" },
    h("span", { class: "arknb-tool-name" }, "Plan review"),
    version ? h("span", { class: "arknb-muted" }, `version ${version}`) : null,
    h("span", { class: "arknb-badge arknb-badge-awaiting_approval" }, previous ? "changed plan" : "new plan")),
  h("div", { class: "arknb-muted" }, "The agent runs only read-only tools until you approve a plan."),
  proposal(a.detail),
  actions,
  opts.error && !opts.decision
    ? h("div", { class: "arknb-error", testid: "arknb-approval-error", role: "alert" }, opts.error) : null);
}
