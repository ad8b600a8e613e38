// Waterfall spans from event dicts; mirrors arknb/widgets/_timeline_model.py spans().
const RUN_END = { "agent.success": "completed", "agent.error": "failed", "agent.cancelled": "cancelled",
  "agent.suspended": "suspended", "agent.aborted": "aborted" };

export function callOf(payload) {
  const c = (payload && payload.call) || {};
  return { id: String(c.id ?? ""), name: String(c.name ?? "?") };
}

export function computeSpans(events) {
  const t0 = firstTime(events);
  const out = [];
  const open = new Map();
  const runs = new Map();   // run id -> its latest run span
  const tools = new Map();  // `${run}|${call}` -> its latest tool span
  const start = (kind, key, label, e, t, parent = null) => {
    const span = { id: out.length, kind, label, run_id: e.run_id, start: t, end: null, start_seq: e.sequence,
      end_seq: null, status: "open", parent: parent ? parent.id : null, depth: parent ? parent.depth + 1 : 0 };
    open.set(`${kind}|${e.run_id}|${key}`, span);
    out.push(span);
    return span;
  };
  const end = (kind, key, e, t, status) => {
    const k = `${kind}|${e.run_id}|${key}`;
    const span = open.get(k);
    if (!span) return null;
    open.delete(k);
    Object.assign(span, { end: t, end_seq: e.sequence, status });
    return span;
  };
  // A sub-agent's run (its events carry parent ids) nests under the parent's delegate_task span.
  const runStart = (e, t, label) => {
    const parent = e.parent_call_id != null ? tools.get(`${e.parent_run_id}|${e.parent_call_id}`) || null : null;
    runs.set(e.run_id, start("run", "", label, e, t, parent));
  };
  for (const e of events) {
    const p = e.payload || {}, t = (Number(e.timestamp) || 0) - t0;
    const run = runs.get(e.run_id) || null;
    if (e.type === "agent.started") runStart(e, t, `run ${e.run_id}`);
    else if (e.type === "agent.resumed") runStart(e, t, `run ${e.run_id} (resumed)`);
    else if (RUN_END[e.type]) {
      end("run", "", e, t, RUN_END[e.type]);
      for (const [k, span] of [...open]) if (span.run_id === e.run_id) {
        Object.assign(span, { end: t, end_seq: e.sequence, status: "unfinished" });
        open.delete(k);
      }
    } else if (e.type === "llm.before") start("model", String(p.turn ?? ""), `model turn ${p.turn ?? "?"}`, e, t, run);
    else if (e.type === "llm.after") end("model", String(p.turn ?? ""), e, t, "done");
    else if (e.type === "context.compressed") {
      const key = `c${e.sequence}`;
      start("compression", key, `compressed ${p.before_tokens ?? "?"}→${p.after_tokens ?? "?"} tokens`, e, t, run);
      end("compression", key, e, t, "done");
    } else if (e.type === "tool.before") {
      const c = callOf(p);
      tools.set(`${e.run_id}|${c.id}`, start("tool", c.id, `${c.name} ${c.id}`, e, t, run));
    } else if (e.type === "tool.after" || e.type === "tool.denied") {
      const c = callOf(p);
      const status = e.type === "tool.denied" ? "denied" : p.deferred ? "waiting"
        : (p.result && p.result.is_error ? "error" : "done");
      if (!end("tool", c.id, e, t, status)) { start("tool", c.id, `${c.name} ${c.id}`, e, t, run); end("tool", c.id, e, t, status); }
    }
  }
  return { spans: out, t0 };
}

/** The spans to show when the spans whose keys are in `collapsed` hide their descendants. */
export function visibleSpans(spans, collapsed) {
  const hidden = new Set();
  const out = [];
  for (const s of spans) {
    if (s.parent !== null && (hidden.has(s.parent) || collapsed.has(spanKey(spans[s.parent])))) {
      hidden.add(s.id);
      continue;
    }
    out.push(s);
  }
  return out;
}

/** A span's key, stable while events arrive (its kind, run and first event). */
export function spanKey(s) { return `${s.kind}|${s.run_id}|${s.start_seq}`; }

export function firstTime(events) {
  let t0 = Infinity;
  for (const e of events) t0 = Math.min(t0, Number(e.timestamp) || 0);
  return Number.isFinite(t0) ? t0 : 0;
}
