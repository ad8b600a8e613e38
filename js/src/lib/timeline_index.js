// What the timeline derives from its events, built incrementally (each event once):
// nested spans (mirrors spans() in arknb/widgets/_timeline_model.py), totals per run,
// the runs and types seen. Positions are the store's (see timeline_store.js).
import { callFields, status, usageOf } from "./timeline_summary.js";

export const RUN_END = { "agent.success": "ok", "agent.error": "error", "agent.cancelled": "cancelled",
  "agent.suspended": "deferred", "agent.aborted": "error" };

/** The events that mark the tool span they came from, and the mark's text. */
const MARKED = {
  "plan.updated": (p) => `plan v${(p.plan && p.plan.version) ?? "?"}${p.change === "status" ? " (statuses)" : ""}`,
  "plan.review_required": (p) => `plan v${(p.plan && p.plan.version) ?? "?"} in review`,
  "skill.activated": (p) => `skill ${p.name || "?"}`,
};

const ts = (e) => (typeof e.timestamp === "number" ? e.timestamp : 0);
const payloadOf = (e) => (e.payload && typeof e.payload === "object" ? e.payload : {});

/** The tool call an event is about (call.id, call_id), or null. */
export function callIdOf(e) {
  const p = payloadOf(e);
  if (typeof p.call_id === "string") return p.call_id;
  if (p.call) return callFields(p.call).id || null;
  return null;
}

/** [parent_run_id, parent_call_id] of a sub-run's event (envelope first, then payload). */
export function parentOf(e) {
  const p = payloadOf(e);
  const run = e.parent_run_id || p.parent_run_id;
  const call = e.parent_call_id || p.parent_call_id;
  return [typeof run === "string" ? run : null, typeof call === "string" ? call : null];
}

function newTotals() {
  return { runs: 0, turns: 0, tool_calls: 0, tokens_in: 0, tokens_out: 0, errors: 0, denied: 0, events: 0,
    reused: 0, settled: 0 };
}

function lowerBound(sorted, value) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (sorted[mid] < value) lo = mid + 1; else hi = mid; }
  return lo;
}

export class TimelineIndex {
  constructor() { this.reset(); }

  reset() {
    this.spans = [];
    this.runs = new Map();      // run id -> run span
    this.turns = new Map();     // run id -> open turn span
    this.models = new Map();    // run id -> open model span
    this.tools = new Map();     // `${run}|${call}` -> latest tool span
    this.runTotals = new Map(); // run id -> totals
    this.turnKeys = new Set();
    this.callKeys = new Set();
    this.sequences = new Map(); // session id -> its events' sequences, sorted (the numbers people see)  // `${run}|${call}` of the calls counted (a call is counted once, not per event)
    this.all = newTotals();
    this.types = new Set();
    this.runOrder = [];         // run ids in order of first appearance
    this.children = new Map();  // run id -> Set of descendant sub-run ids (direct)
    this.runParent = new Map(); // run id -> parent run id
    this.t0 = null;
    this.tEnd = null;
    this.version = 0;           // bumps when spans change (the waterfall redraws)
  }

  /** Fold events [from, to) of `store` in (call with consecutive ranges). */
  addRange(store, from, to) {
    for (let pos = from; pos < to; pos++) this.add(store.at(pos), pos);
  }

  add(e, pos) {
    const t = ts(e);
    if (this.t0 === null || t < this.t0) this.t0 = t;
    if (this.tEnd === null || t > this.tEnd) this.tEnd = t;
    if (!this.types.has(e.type)) this.types.add(e.type);
    this.count(e);
    this.number(e);
    if (e.type !== "llm.chunk") this.spanEvent(e, pos, t);
  }

  count(e) {
    const rid = String(e.run_id);
    let tot = this.runTotals.get(rid);
    if (!tot) {
      tot = newTotals(); tot.runs = 1;
      this.runTotals.set(rid, tot);
      this.runOrder.push(rid);
      this.all.runs += 1;
    }
    tot.events++; this.all.events++;
    if (e.type === "llm.chunk") return; // the hot path: a chunk counts nothing else
    const all = this.all;
    const p = payloadOf(e);
    if (e.type === "llm.before") {
      const key = `${rid}|${p.turn}`;
      if (!this.turnKeys.has(key)) { this.turnKeys.add(key); tot.turns++; all.turns++; }
    } else if (e.type === "llm.after") {
      const [tin, tout] = usageOf(p);
      tot.tokens_in += tin; all.tokens_in += tin; tot.tokens_out += tout; all.tokens_out += tout;
    } else if (e.type === "tool.after" || e.type === "tool.denied") {
      const key = `${rid}|${callIdOf(e)}`;
      if (!this.callKeys.has(key)) { this.callKeys.add(key); tot.tool_calls++; all.tool_calls++; }
      if (p.reused) { tot.reused++; all.reused++; } else if (p.settled_by) { tot.settled++; all.settled++; }
    }
    if (e.type === "tool.denied") { tot.denied++; all.denied++; }
    else if (status(e) === "error") { tot.errors++; all.errors++; }
  }

  /** Remember `e`'s sequence among its session's (usually a push: events come in order). */
  number(e) {
    const s = e.sequence;
    if (typeof s !== "number") return;
    const sid = String(e.session_id ?? "");
    let seqs = this.sequences.get(sid);
    if (!seqs) { seqs = []; this.sequences.set(sid, seqs); }
    if (!seqs.length || s > seqs[seqs.length - 1]) { seqs.push(s); return; }
    const i = lowerBound(seqs, s);
    if (seqs[i] !== s) seqs.splice(i, 0, s);
  }

  /** The number shown for `e`: its place among the events of its session this timeline
   *  holds (1, 2, 3, ...). The runtime's sequence jumps after a restore (a gap kept
   *  internal, so two processes never share a number); people see no jump. */
  ordinal(e) {
    const seqs = this.sequences.get(String(e.session_id ?? ""));
    if (!seqs || typeof e.sequence !== "number") return null;
    return lowerBound(seqs, e.sequence) + 1;
  }

  totals(runId) {
    if (!runId) return this.all;
    return this.runTotals.get(runId) || newTotals();
  }

  open(kind, label, e, pos, t, parent, extra = {}) {
    const span = { id: this.spans.length, kind, label, run_id: String(e.run_id), parent: parent ? parent.id : null,
      depth: parent ? parent.depth + 1 : 0, start: t, end: null, status: "open", start_seq: e.sequence,
      end_seq: null, start_pos: pos, end_pos: null, ...extra };
    this.spans.push(span);
    this.version++;
    return span;
  }

  close(span, e, pos, t, state) {
    if (!span || span.end !== null) return;
    Object.assign(span, { end: t, end_seq: e.sequence, end_pos: pos, status: state });
    this.version++;
  }

  startRun(e, pos, t, label) {
    const rid = String(e.run_id);
    const [parentRun, parentCall] = parentOf(e);
    let parent = null;
    if (parentRun) {
      parent = this.tools.get(`${parentRun}|${parentCall || ""}`) || this.runs.get(parentRun) || null;
      this.runParent.set(rid, parentRun);
      if (!this.children.has(parentRun)) this.children.set(parentRun, new Set());
      this.children.get(parentRun).add(rid);
    }
    const span = this.open("run", label, e, pos, t, parent);
    this.runs.set(rid, span);
    return span;
  }

  runOf(e, pos, t) {
    return this.runs.get(String(e.run_id)) || this.startRun(e, pos, t, `run ${e.run_id} (partial)`);
  }

  parentForCall(rid, e, pos, t) { return this.turns.get(rid) || this.runOf(e, pos, t); }

  endRun(e, pos, t, state) {
    const rid = String(e.run_id);
    const run = this.runOf(e, pos, t);
    // What is still open ends with the run: as it ended, when that was a success or a
    // pause for approval; otherwise it never finished.
    const inner = state === "ok" || state === "deferred" ? state : "unfinished";
    for (let i = run.id + 1; i < this.spans.length; i++) {
      const s = this.spans[i];
      if (s.run_id === rid && s.end === null) this.close(s, e, pos, t, inner);
    }
    this.turns.delete(rid);
    this.models.delete(rid);
    this.close(run, e, pos, t, state);
  }

  spanEvent(e, pos, t) {
    const p = payloadOf(e);
    const rid = String(e.run_id);
    const type = e.type;
    if (type === "agent.started") this.startRun(e, pos, t, `run ${rid}`);
    else if (type === "agent.resumed") {
      const prev = p.previous_run_id;
      this.startRun(e, pos, t, `run ${rid} (resumed${prev ? ` after ${prev}` : ""})`);
    } else if (RUN_END[type]) this.endRun(e, pos, t, RUN_END[type]);
    else if (type === "llm.before") {
      let turn = this.turns.get(rid);
      if (turn && turn.turn !== p.turn) { this.close(turn, e, pos, t, "ok"); turn = null; }
      if (!turn) {
        turn = this.open("turn", `turn ${p.turn ?? "?"}`, e, pos, t, this.runOf(e, pos, t), { turn: p.turn });
        this.turns.set(rid, turn);
      }
      this.close(this.models.get(rid), e, pos, t, "unfinished");
      const attempt = p.attempt;
      // An extension's own call (a context summary) says what it was for.
      const what = p.purpose ? `${String(p.purpose).replace(/_/g, " ")} call` : "model call";
      const label = `${what}${!attempt || attempt === 1 ? "" : ` (attempt ${attempt})`}`;
      this.models.set(rid, this.open("model", label, e, pos, t, turn, { turn: p.turn }));
    } else if (type === "llm.after") {
      this.close(this.models.get(rid), e, pos, t, "ok");
      this.models.delete(rid);
    } else if (type === "turn.completed") {
      this.close(this.turns.get(rid), e, pos, t, "ok");
      this.turns.delete(rid);
    } else if (type === "tool.before") {
      const call = callFields(p.call);
      this.tools.set(`${rid}|${call.id}`, this.open("tool", `${call.name} ${call.id}`, e, pos, t,
        this.parentForCall(rid, e, pos, t), { call_id: call.id }));
    } else if (type === "tool.after" || type === "tool.denied") {
      const call = callFields(p.call);
      const key = `${rid}|${call.id}`;
      let span = this.tools.get(key);
      if (!span || span.end !== null) {
        span = this.open("tool", `${call.name} ${call.id}`, e, pos, t, this.parentForCall(rid, e, pos, t), { call_id: call.id });
        this.tools.set(key, span);
      }
      this.close(span, e, pos, t, type === "tool.denied" ? "denied" : status(e));
    } else if (type === "graph.step_started") {
      // A graph step (DESIGN §16): its agent's spans nest under it (their parent call is the step).
      const sid = String(p.step_id || "");
      const run = this.runs.get(rid) || this.startRun(e, pos, t, `graph ${p.graph ?? "?"} ${rid}`);
      this.tools.set(`${rid}|${sid}`, this.open("step", `step ${p.step ?? "?"} ${p.node ?? "?"}`, e, pos, t,
        run, { call_id: sid, node: p.node }));
    } else if (type === "graph.step_finished") {
      this.close(this.tools.get(`${rid}|${String(p.step_id || "")}`), e, pos, t, p.status === "completed" ? "ok" : "error");
    } else if (type === "context.compressed") {
      // A mark (no duration) where a compression replaced older messages in the request.
      const parent = this.turns.get(rid) || this.runOf(e, pos, t);
      const mark = this.open("compression", `compressed ${p.before_tokens ?? "?"}→${p.after_tokens ?? "?"} tokens`, e, pos, t, parent);
      this.close(mark, e, pos, t, "ok");
    } else if (type === "hook.decision" && p.action === "defer" && p.slot === "before_tool_call") {
      const call = callFields(p.before);
      const cid = typeof p.call_id === "string" ? p.call_id : call.id;
      const span = this.open("tool", `${call.name} ${cid}`, e, pos, t, this.parentForCall(rid, e, pos, t), { call_id: cid });
      this.close(span, e, pos, t, "deferred");
      this.tools.set(`${rid}|${cid}`, span);
    } else if (MARKED[type]) {
      // Plan updates and skill activations mark the tool call that made them (DESIGN §14).
      const span = this.tools.get(`${rid}|${callIdOf(e)}`);
      if (span) { span.mark = MARKED[type](p); span.markKind = type.split(".")[0]; this.version++; }
      else if (!this.runs.has(rid)) this.runOf(e, pos, t);
    } else if (!this.runs.has(rid) && type !== "approval.decided" && type !== "approval.resolved") this.runOf(e, pos, t);
  }

  /** The run ids of `runId` and every sub-run below it. */
  descendants(runId) {
    const out = new Set([runId]);
    const stack = [runId];
    while (stack.length) {
      for (const child of this.children.get(stack.pop()) || []) if (!out.has(child)) { out.add(child); stack.push(child); }
    }
    return out;
  }

  /** A predicate (event, pos) => bool: the event belongs to `span` (or a sub-run under it). */
  memberOf(span) {
    if (span.kind === "run") {
      const runs = this.descendants(span.run_id);
      return (e) => runs.has(String(e.run_id));
    }
    if (span.kind === "tool") {
      const subRuns = new Set();
      for (const [child, parentRun] of this.runParent) {
        const s = this.runs.get(child);
        if (parentRun === span.run_id && s && s.parent === span.id) for (const r of this.descendants(child)) subRuns.add(r);
      }
      return (e) => subRuns.has(String(e.run_id)) || (String(e.run_id) === span.run_id && callIdOf(e) === span.call_id);
    }
    const lo = span.start_pos, hi = span.end_pos === null ? Infinity : span.end_pos;
    return (e, pos) => String(e.run_id) === span.run_id && pos >= lo && pos <= hi;
  }
}
