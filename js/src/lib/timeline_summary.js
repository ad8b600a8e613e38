// One line and one status per event; mirrors arknb/widgets/_timeline_summary.py word
// for word (tests/js/test_timeline_front.py compares the two on every event type).
// Lengths count code points, as Python's len() does.

export const STATUSES = ["ok", "error", "denied", "deferred", "cancelled", "warn", "changed", ""];
const CLIP = 80;
// How a person settled a call a crash left in doubt (approval.decided's resolution, DESIGN §13).
const RESOLVED_AS = { rerun: "run again by a person", done: "marked done by a person",
  failed: "marked failed by a person" };

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isInt = (v) => Number.isInteger(v) && typeof v === "number";
const str = (v) => (v === null || v === undefined ? "" : String(v));

export function clip(text, limit = CLIP) {
  const line = str(text).split(/\s+/).filter(Boolean).join(" ");
  const cps = Array.from(line);
  return cps.length <= limit ? line : cps.slice(0, limit - 1).join("") + "…";
}

const quote = (text, limit = 60) => JSON.stringify(clip(text, limit));
const plural = (n, word) => `${n} ${word}${n !== 1 ? "s" : ""}`;
const thousands = (n) => n.toLocaleString("en-US");

export function fmtMs(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
  if (ms < 1) return "<1 ms";
  if (ms < 1000) return `${Math.floor(ms + 0.5)} ms`;
  return `${(Math.floor(ms / 10 + 0.5) / 100).toFixed(2)} s`;
}

const n0 = (v) => (isInt(v) ? v : 0);

export function usageOf(p) {
  const u = isObj(p.usage) ? p.usage : {};
  return [n0(u.input_tokens), n0(u.output_tokens)];
}

function tokens(p) {
  if (isObj(p.usage) && p.usage.reported === false) return "tokens unknown"; // no usage from the server
  const [tin, tout] = usageOf(p);
  return tin || tout ? `${thousands(tin)} in / ${thousands(tout)} out tokens` : "";
}

export function textOf(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join("");
  if (isObj(value)) {
    if (typeof value.text === "string") return value.text;
    if (Array.isArray(value.contents)) return value.contents.map((c) => (isObj(c) ? str(c.text) : "")).join("");
  }
  return "";
}

export function callFields(call) {
  const c = isObj(call) ? call : {};
  let args = c.arguments_json;
  if ((args === undefined || args === null) && "arguments" in c) {
    args = typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments);
  }
  return { id: str(c.id), name: str(c.name || "?"), arguments: typeof args === "string" ? args : "{}" };
}

export function errorText(error) {
  if (error === null || error === undefined) return "";
  if (typeof error === "string") return error;
  if (isObj(error)) {
    const { code, message } = error;
    if (Object.keys(error).length === 0) return "{}";
    return code ? `${code}: ${str(message)}` : str(message || JSON.stringify(error));
  }
  return str(error);
}

function callLine(p, key = "call") {
  const call = callFields(p[key]);
  let args = call.arguments;
  try {
    const parsed = JSON.parse(args);
    args = isObj(parsed) && Object.keys(parsed).length === 0 ? "" : JSON.stringify(parsed);
  } catch { /* not JSON: shown as it is */ }
  return `${call.name}(${args ? clip(args, 50) : ""}) ${call.id}`.trimEnd();
}

const join = (...parts) => parts.filter(Boolean).join(" · ");

function firstInput(p) {
  const items = p.input;
  if (Array.isArray(items) && items.length) return quote(typeof items[0] === "string" ? items[0] : textOf(items[0]));
  return "";
}

const itemsOf = (p) => (Array.isArray(p.items) ? p.items.map((i) => (isObj(i) ? i : {})) : []);

function messageLine(p) {
  const m = isObj(p.message) ? p.message : {};
  const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
  const text = textOf(p.message);
  return join(calls.length ? plural(calls.length, "tool call") : "", text ? quote(text) : "");
}

/** A one-line description of an event for its row. */
export function summary(e) {
  const t = e.type;
  const p = isObj(e.payload) ? e.payload : {};
  switch (t) {
    case "llm.chunk": return `${p.kind || "text"} ${JSON.stringify(p.text || "")}`;
    case "agent.started": return join(p.resumed ? "resumed" : "", firstInput(p)) || "started";
    case "agent.resumed":
      return join(`resumed (${p.reason || "?"})`, p.previous_run_id ? `after ${p.previous_run_id}` : "");
    case "agent.success":
      return join(str(p.stop_reason || "completed"), isInt(p.turns) ? plural(p.turns, "turn") : "", tokens(p),
        p.text ? quote(p.text) : "");
    case "agent.error": return join(str(p.stop_reason || "failed"), clip(errorText(p.error), 100));
    case "agent.cancelled": return join("cancelled", str(p.reason || ""));
    case "agent.suspended": return join(`suspended (${p.reason || "?"})`, p.batch_id ? `batch ${p.batch_id}` : "");
    case "agent.aborted": {
      const where = p.hook || p.slot ? `by ${p.hook || "?"} in ${p.slot || "?"}` : "";
      return join(`aborted ${where}`.trim(), clip(errorText(p.error), 100));
    }
    case "llm.before": {
      const tools = Array.isArray(p.tools) ? p.tools : [];
      return join(`turn ${p.turn ?? "?"}`, p.purpose ? `for ${str(p.purpose)}` : "", str(p.model || ""),
        isInt(p.message_count) ? `${p.message_count} messages` : "",
        tools.length ? `${tools.length} tools` : "", p.responded_by_hook ? "answered by a hook" : "");
    }
    case "llm.retry":
      return join(`turn ${p.turn ?? "?"} retry ${p.attempt ?? "?"}`,
        typeof p.delay === "number" ? `in ${fmtMs(p.delay * 1000)}` : "", clip(errorText(p.error), 80));
    case "llm.after": return join(`turn ${p.turn ?? "?"}`, str(p.finish_reason || ""), tokens(p), messageLine(p));
    case "llm.truncated":
      return join(`turn ${p.turn ?? "?"} cut at max_tokens`, isInt(p.max_tokens) ? `max_tokens ${p.max_tokens}` : "",
        isInt(p.output_tokens) ? `${p.output_tokens} tokens` : "");
    case "output.validated":
      return join(`${p.name || "output"} accepted`, p.mode ? `via ${p.mode}` : "",
        isInt(p.retries) && p.retries ? `after ${p.retries} retr${p.retries === 1 ? "y" : "ies"}` : "");
    case "output.retry": {
      const fields = Array.isArray(p.fields) ? p.fields : [];
      return join(`${p.name || "output"} refused (try ${p.attempt ?? "?"})`,
        fields.length ? `fields ${fields.map(String).join(", ")}` : "", p.retrying ? "asking again" : "no tries left");
    }
    case "tool.before": return callLine(p);
    case "tool.after": {
      const r = isObj(p.result) ? p.result : {};
      const origin = p.reused ? "reused from the record" : p.settled_by ? "settled by a person" : "";
      return join(callLine(p), origin, `${r.is_error ? "error " : "→ "}${quote(r.text || "")}`,
        origin ? "" : fmtMs(p.duration_ms));
    }
    case "tool.progress": {
      // JSON numbers print as Python's _num does (2.0 arrives as 2)
      const done = p.total !== null && p.total !== undefined ? `${p.progress}/${p.total}` : `${p.progress}`;
      return join(`${p.name || "tool"} ${p.call_id || ""}`.trim(), `progress ${done}`, clip(String(p.message || ""), 80));
    }
    case "tool.sampling":
      return join(`${p.name || "tool"} ${p.call_id || ""}`.trim(), "sampled the model", `→ ${quote(String(p.text || ""))}`);
    case "tool.denied": return join(callLine(p), p.hook ? `denied by ${p.hook}` : "denied", clip(p.reason || "", 80));
    case "approval.required": {
      const items = itemsOf(p);
      const names = items.map((i) => callFields(i.tool_call).name).join(", ");
      return `${plural(items.length, "call")} ${items.length === 1 ? "needs" : "need"} approval: ${names}`.replace(/[: ]+$/, "");
    }
    case "approval.decided": {
      if (p.resolution) return join(`${p.approval_id || "?"} ${RESOLVED_AS[p.resolution] || p.resolution}`,
        p.all_decided ? "all decided" : "");
      const reason = p.deny_reason ? `: ${clip(p.deny_reason, 60)}` : "";
      return join(`${p.approval_id || "?"} ${p.decision || "?"}${reason}`, p.all_decided ? "all decided" : "");
    }
    case "approval.resolved": {
      const decisions = itemsOf(p).map((i) => str(i.decision || "?"));
      const counts = [...new Set(decisions)].sort().map((d) => `${decisions.filter((x) => x === d).length} ${d}`).join(", ");
      return join(`batch ${p.batch_id || "?"} resolved`, counts);
    }
    case "loop.detected":
      return join(`${p.tool || "?"} repeated ${p.count ?? "?"}× (threshold ${p.threshold ?? "?"})`, clip(p.message || "", 80));
    case "hook.decision":
      return join(`${p.hook || "?"} ${p.action || "?"} in ${p.slot || "?"}`, p.ignored ? "ignored (mandatory save)" : "",
        clip(p.reason || "", 80));
    case "hook.diagnostic": return join(`${p.hook || "?"} ${p.kind || "?"} in ${p.slot || "?"}`, clip(p.message || "", 100));
    case "state.persisted":
      if (p.ok === false) return join(`save failed (${p.reason || "?"})`, clip(errorText(p.error), 100));
      if (p.skipped) return join(`save skipped (${p.reason || "?"})`, p.hook ? `by ${p.hook}` : "");
      return join(`saved (${p.reason || "?"})`, p.mandatory ? "mandatory" : "");
    case "turn.completed": return join(`turn ${p.turn ?? "?"} ${p.action || ""}`.trimEnd(), messageLine(p));
    case "state.loaded":
      return join(`loaded revision ${p.revision ?? "?"}`, isInt(p.messages) ? `${p.messages} messages` : "",
        p.pending_approval ? "approval pending" : "");
    case "runtime.detached": return `detached (${p.reason || "?"})`;
    case "secret.redacted": return `${isInt(p.count) ? p.count : "?"} secret(s) redacted in ${p.where || "?"}`;
    case "plan.updated": {
      const plan = isObj(p.plan) ? p.plan : {};
      const items = Array.isArray(plan.items) ? plan.items : [];
      const done = items.filter((i) => isObj(i) && i.status === "completed").length;
      return join(`plan v${plan.version ?? "?"}`, `${items.length} items`, `${done} done`,
        p.change === "status" ? "statuses only" : p.change === "new" ? "new plan" : "", p.approved ? "approved" : "");
    }
    case "plan.review_required": return `plan review needed (${p.approval_id || "?"})`;
    case "plan.review_resolved": return join(`plan ${p.decision || "?"}`, clip(p.reason || "", 80));
    case "skill.activated": {
      const tools = Array.isArray(p.tools) ? p.tools : [];
      return join(`skill ${p.name || "?"}`, tools.length ? `${tools.length} tools` : "");
    }
    case "skill.skipped": {
      const clashes = Array.isArray(p.clashes) ? p.clashes.map(String) : [];
      return join(`skill ${p.name || "?"} skipped`,
        clashes.length ? `tools named like the runtime's: ${clashes.join(", ")}` : "");
    }
    case "context.compressed": return `context ${thousands(n0(p.before_tokens))} → ${thousands(n0(p.after_tokens))} tokens`;
    case "memory.recorded": return join(`remembered ${p.episode_id || "?"}`, clip(String(p.summary || "").split("\n")[0], 80));
    case "operation.in_doubt":
      return join(p.call ? `${callLine(p)} in doubt` : `${p.operation_id || "?"} in doubt`,
        isInt(p.attempts) ? `after ${p.attempts} attempts` : "");
    case "bus.dropped": return `${p.dropped ?? "?"} events dropped for ${p.listener || "?"}`;
    case "graph.step_started": return `step ${p.step ?? "?"} ${p.node || "?"}`;
    case "graph.step_finished": return `step ${p.step ?? "?"} ${p.node || "?"} ${p.status || ""}`.trim();
    case "graph.waiting": return join(`${p.node || "?"} waits (${p.kind || "?"})`, clip(String(p.question || ""), 80));
    default: {
      const keys = Object.keys(p).map(String).sort().slice(0, 6).join(", ");
      return keys ? `{${keys}}` : "";
    }
  }
}

const HOOK_STATUS = { deny: "denied", defer: "deferred", abort: "error", drop: "warn", hold: "warn", retry: "warn",
  stop: "warn", skip: "warn" };
const WARN = new Set(["llm.retry", "llm.truncated", "loop.detected", "secret.redacted", "bus.dropped", "operation.in_doubt",
  "runtime.detached", "graph.waiting", "skill.skipped"]);

/** The row's status: one of STATUSES. */
export function status(e) {
  const t = e.type;
  const p = isObj(e.payload) ? e.payload : {};
  switch (t) {
    case "agent.success": return "ok";
    case "agent.error": case "agent.aborted": return "error";
    case "agent.cancelled": return "cancelled";
    case "agent.suspended": case "approval.required": case "plan.review_required": return "deferred";
    case "tool.after": return p.deferred ? "deferred" : isObj(p.result) && p.result.is_error ? "error" : "ok";
    case "tool.denied": return "denied";
    case "approval.decided": case "plan.review_resolved":
      if (p.resolution) return p.resolution === "failed" ? "error" : "ok";  // an in-doubt call, settled
      return p.decision === "approved" ? "ok" : p.decision === "denied" || p.decision === "rejected" ? "denied" : "";
    case "hook.decision": return p.ignored ? "" : HOOK_STATUS[str(p.action)] || "changed";
    case "hook.diagnostic": return p.fail_closed ? "error" : "warn";
    case "state.persisted": return p.ok === false ? "error" : p.skipped ? "warn" : "";
    case "graph.step_finished": return p.status === "failed" ? "error" : "";
    case "output.validated": return "ok";
    case "output.retry": return p.retrying ? "warn" : "error";
    default: return WARN.has(t) ? "warn" : "";
  }
}
