// A hook decision, explained: what the hook did, why, what it changed (a structured
// diff), what the model got instead (deny), what became of the approval (defer), the
// text affected (drop/hold), and which row it changed (a link that selects it).
import { h } from "./dom.js";
import { jsonView } from "./json_view.js";
import { valueDiffView } from "./value_diff.js";
import { callFields, textOf } from "./timeline_summary.js";
import { callIdOf } from "./timeline_index.js";

const SCAN = 20000; // events looked at around a decision to find its row

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function scan(store, from, step, test) {
  const end = step > 0 ? Math.min(store.hi, from + SCAN) : Math.max(store.lo - 1, from - SCAN);
  for (let pos = from; step > 0 ? pos < end : pos > end; pos += step) {
    const e = store.at(pos);
    if (e && test(e)) return pos;
  }
  return null;
}

/** The position of the row a hook decision (at `pos`) changed, or null. */
export function linkedRow(store, pos) {
  const d = store.at(pos);
  const p = d.payload || {};
  const run = d.run_id;
  const sameRun = (e) => e.run_id === run;
  const callId = callIdOf(d) || (isObj(p.before) ? callFields(p.before).id : null);
  switch (p.slot) {
    case "before_tool_call": {
      // By call id, in any run: a batch that waited for approval runs in the continued run.
      const want = p.action === "deny" ? ["tool.denied"] : p.action === "defer" ? ["approval.required"] : ["tool.before", "tool.denied"];
      return scan(store, pos + 1, 1, (e) => want.includes(e.type) && (e.type === "approval.required"
        ? (e.payload.items || []).some((i) => isObj(i) && callFields(i.tool_call).id === callId)
        : callIdOf(e) === callId));
    }
    case "after_tool_call":
      return scan(store, pos - 1, -1, (e) => e.type === "tool.after" && callIdOf(e) === callId);
    case "before_model_call": return scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "llm.before");
    case "after_model_call": return scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "llm.after");
    case "on_model_chunk":
      if (p.action === "rewrite") {
        const hit = scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "llm.chunk" && e.payload.index === p.index);
        if (hit !== null) return hit;
      }
      return scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "llm.after");
    case "before_run": return scan(store, pos - 1, -1, (e) => sameRun(e) && e.type === "agent.started");
    case "on_turn_completion": return scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "turn.completed");
    case "before_persist_state": return scan(store, pos + 1, 1, (e) => sameRun(e) && e.type === "state.persisted");
    default: return null;
  }
}

/** What became of a deferred call: {state: "approved"|"denied"|"pending"|"unknown", reason, approval_id}. */
export function approvalFate(store, pos) {
  const d = store.at(pos);
  const p = d.payload || {};
  const callId = typeof p.call_id === "string" ? p.call_id : callFields(p.before).id;
  let approvalId = null;
  const required = scan(store, pos + 1, 1, (e) => e.type === "approval.required" && e.run_id === d.run_id &&
    (e.payload.items || []).some((i) => {
      if (isObj(i) && callFields(i.tool_call).id === callId) { approvalId = i.approval_id; return true; }
      return false;
    }));
  if (required === null || !approvalId) return { state: "unknown", reason: "", approval_id: null };
  const decided = scan(store, required + 1, 1, (e) => e.type === "approval.decided" && e.payload.approval_id === approvalId);
  if (decided === null) return { state: "pending", reason: "", approval_id: approvalId };
  const dp = store.at(decided).payload;
  return { state: dp.decision === "approved" ? "approved" : "denied", reason: dp.deny_reason || "", approval_id: approvalId,
    pos: decided };
}

/** The synthetic result the model got for a denied call (from its tool.denied row). */
function deniedResult(store, pos, callId) {
  const hit = scan(store, pos + 1, 1, (e) => e.type === "tool.denied" && callIdOf(e) === callId);
  return hit === null ? null : store.at(hit).payload.result;
}

const section = (title, ...body) => h("div", { class: "arknb-hook-section" }, h("div", { class: "arknb-muted" }, title), ...body);
const pre = (text, testid) => h("pre", { class: "arknb-hook-text", testid }, String(text ?? ""));

function headline(p) {
  const call = isObj(p.before) && (p.before.name || p.before.arguments_json !== undefined) ? callFields(p.before) : null;
  const what = call ? `${call.name} ${call.id}` : p.slot === "on_model_chunk" ? `chunk #${p.index ?? "?"}` : "";
  const verbs = { rewrite: "rewrote", deny: "denied", defer: "deferred for approval", abort: "aborted the run at",
    drop: "dropped", hold: "held back", respond: "answered without the model", retry: "asked for a retry of",
    inject: "injected messages after", stop: "stopped the run after", skip: "skipped the save",
    continue_run: "asked for another turn" };
  return `${p.hook || "?"} ${verbs[p.action] || p.action || "?"}${what ? ` ${what}` : ""} (${p.slot || "?"})`;
}

/**
 * The detail of a hook.decision at `pos`: `onSelect(pos)` is called by the link to the
 * row it changed.
 */
export function hookDecisionView(store, pos, onSelect) {
  const e = store.at(pos);
  const p = e.payload || {};
  const parts = [h("div", { class: "arknb-hook-head", testid: "arknb-hook-headline" }, headline(p))];
  if (p.reason) parts.push(h("div", { testid: "arknb-hook-reason" }, h("span", { class: "arknb-muted" }, "reason: "), String(p.reason)));
  if (p.ignored) parts.push(h("div", { class: "arknb-muted" }, "ignored: a mandatory save cannot be skipped"));
  const callId = typeof p.call_id === "string" ? p.call_id : callFields(p.before).id;
  switch (p.action) {
    case "rewrite":
      parts.push(section("before → after", valueDiffView(p.before, p.after)));
      break;
    case "deny": {
      const given = p.after ?? deniedResult(store, pos, callId);
      parts.push(section("the model got instead", given
        ? pre(isObj(given) ? textOf(given) || JSON.stringify(given) : given, "arknb-hook-synthetic")
        : h("div", { class: "arknb-muted", testid: "arknb-hook-synthetic" }, "(no result recorded in this window)")));
      parts.push(section("the call it denied", jsonView(p.before, { openDepth: 1 })));
      break;
    }
    case "defer": {
      const fate = approvalFate(store, pos);
      const word = { approved: "approved", denied: "denied", pending: "waiting for a decision", unknown: "not in this window" }[fate.state];
      const line = h("div", { class: `arknb-hook-fate arknb-status-${fate.state === "approved" ? "ok" : fate.state === "denied" ? "denied" : "deferred"}`,
        testid: "arknb-hook-fate", "data-fate": fate.state },
      `approval${fate.approval_id ? ` ${fate.approval_id}` : ""}: ${word}${fate.reason ? ` (${fate.reason})` : ""}`);
      if (fate.pos !== undefined) {
        line.append(" ", h("button", { type: "button", class: "arknb-link", testid: "arknb-hook-fate-link",
          onclick: () => onSelect(fate.pos) }, "show decision"));
      }
      parts.push(section("deferred for approval", line));
      parts.push(section("the call waiting", jsonView(p.before, { openDepth: 1 })));
      break;
    }
    case "drop": case "hold": {
      const b = isObj(p.before) ? p.before : {};
      const text = [b.text, b.reasoning].filter(Boolean).join("\n");
      parts.push(section(p.action === "drop" ? "text dropped" : "text held back (joined with the next chunk)",
        pre(text, "arknb-hook-affected")));
      break;
    }
    case "respond": parts.push(section("the response given", jsonView(p.after, { openDepth: 2 }))); break;
    case "inject": parts.push(section("messages injected", jsonView(p.after, { openDepth: 2 }))); break;
    case "continue_run": if (p.after) parts.push(section("messages added", jsonView(p.after, { openDepth: 2 }))); break;
    default:
      if (p.before !== null && p.before !== undefined) parts.push(section("value", jsonView(p.before, { openDepth: 1 })));
  }
  const target = linkedRow(store, pos);
  if (target !== null) {
    const t = store.at(target);
    parts.push(h("div", { class: "arknb-hook-link" }, h("span", { class: "arknb-muted" }, "changed row: "),
      h("button", { type: "button", class: "arknb-link", testid: "arknb-hook-link", "data-target": String(target),
        onclick: () => onSelect(target) }, `#${t.sequence} ${t.type}`)));
  }
  return h("div", { class: "arknb-hook", testid: "arknb-hook-decision", "data-action": String(p.action || "") }, parts);
}
