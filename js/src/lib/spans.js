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
  const start = (kind, key, label, e, t) => {
    const span = { kind, label, run_id: e.run_id, start: t, end: null, start_seq: e.sequence, end_seq: null, status: "open" };
    open.set(`${kind}|${e.run_id}|${key}`, span);
    out.push(span);
  };
  const end = (kind, key, e, t, status) => {
    const k = `${kind}|${e.run_id}|${key}`;
    const span = open.get(k);
    if (!span) return null;
    open.delete(k);
    Object.assign(span, { end: t, end_seq: e.sequence, status });
    return span;
  };
  for (const e of events) {
    const p = e.payload || {}, t = (Number(e.timestamp) || 0) - t0;
    if (e.type === "agent.started") start("run", "", `run ${e.run_id}`, e, t);
    else if (RUN_END[e.type]) {
      end("run", "", e, t, RUN_END[e.type]);
      for (const [k, span] of [...open]) if (span.run_id === e.run_id) {
        Object.assign(span, { end: t, end_seq: e.sequence, status: "unfinished" });
        open.delete(k);
      }
    } else if (e.type === "llm.before") start("model", String(p.turn ?? ""), `model turn ${p.turn ?? "?"}`, e, t);
    else if (e.type === "llm.after") end("model", String(p.turn ?? ""), e, t, "done");
    else if (e.type === "tool.before") { const c = callOf(p); start("tool", c.id, `${c.name} ${c.id}`, e, t); }
    else if (e.type === "tool.after" || e.type === "tool.denied") {
      const c = callOf(p);
      const status = e.type === "tool.denied" ? "denied" : (p.result && p.result.is_error ? "error" : "done");
      if (!end("tool", c.id, e, t, status)) { start("tool", c.id, `${c.name} ${c.id}`, e, t); end("tool", c.id, e, t, status); }
    }
  }
  return { spans: out, t0 };
}

export function firstTime(events) {
  let t0 = Infinity;
  for (const e of events) t0 = Math.min(t0, Number(e.timestamp) || 0);
  return Number.isFinite(t0) ? t0 : 0;
}
