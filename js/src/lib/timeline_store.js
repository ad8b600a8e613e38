// The browser's window of a TimelineWidget's events: positions [lo, hi) of the
// kernel's log (arknb/widgets/_timeline_store.py), filled by `events` messages and
// bounded by max_view_events. Messages are unpacked here (column batches, see
// arknb/widgets/_timeline_wire.py) and applied once per animation frame by the caller.

/** A buffer the comm delivered (DataView, ArrayBuffer or typed array) as an ArrayBuffer slice. */
function bytesOf(buf) {
  if (buf instanceof ArrayBuffer) return buf;
  if (ArrayBuffer.isView(buf)) return buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
  throw new Error("timeline: a message buffer is not binary");
}

const floats = (buffers, i) => new Float64Array(bytesOf(buffers[i]));
const ints = (buffers, i) => new Int32Array(bytesOf(buffers[i]));
const codes = (buffers, i) => new Uint16Array(bytesOf(buffers[i]));
// ignoreBOM: a text that starts with U+FEFF keeps it (the kernel never writes a BOM).
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true });

/** A string column: one NUL-separated UTF-8 buffer, or a plain list. */
const strings = (value, buffers) => (typeof value === "number" ? utf8.decode(bytesOf(buffers[value])).split("\0") : value);

/** A coded string column of a batch: the table's value for each event. */
function column(item, name, buffers) {
  const table = item[name], at = item[`${name}_at`];
  if (at === null || at === undefined) return () => table[0];
  const code = codes(buffers, at);
  return (i) => table[code[i]];
}

/** The event objects an `events` message carries (exactly AgentEvent.to_dict()). */
export function unpack(items, buffers = []) {
  const out = [];
  for (const item of items) {
    if (!item || typeof item.batch !== "number") { out.push(item); continue; }
    const n = item.batch;
    const type = column(item, "type", buffers), session = column(item, "session_id", buffers);
    const run = column(item, "run_id", buffers);
    // A sub-agent's events carry their parent run and call (sent only when a batch has some).
    const parented = item.parent_run_id !== undefined;
    const parentRun = parented ? column(item, "parent_run_id", buffers) : null;
    const parentCall = parented ? column(item, "parent_call_id", buffers) : null;
    const seq = floats(buffers, item.seq);
    const time = floats(buffers, item.ts);
    const chunks = !!item.chunks;
    const kind = chunks ? column(item, "kind", buffers) : null;
    const index = chunks ? ints(buffers, item.index) : null;
    const ids = strings(item.id, buffers), texts = chunks ? strings(item.text, buffers) : null;
    // A tool call's chunks also carry its id and name: [[chunk position, call_id, name], ...].
    const calls = chunks && Array.isArray(item.chunk_calls) ? new Map(item.chunk_calls.map((x) => [x[0], x])) : null;
    let c = 0, p = 0;
    for (let i = 0; i < n; i++) {
      const t = type(i), r = run(i), sequence = seq[i];
      let payload;
      if (chunks && t === "llm.chunk") {
        payload = { kind: kind(c), text: texts[c], index: index[c] };
        const call = calls && calls.get(c);
        if (call) { payload.call_id = call[1]; payload.name = call[2]; }
        c++;
      }
      else payload = item.payload[p++];
      const event = { event_id: ids[i], type: t, session_id: session(i), run_id: r,
        sequence, timestamp: time[i], payload };
      if (parented && parentRun(i) !== null) { event.parent_run_id = parentRun(i); event.parent_call_id = parentCall(i); }
      out.push(event);
    }
  }
  return out;
}

export class EventStore {
  constructor(maxEvents = 100000) {
    this.maxEvents = maxEvents;
    this.events = [];
    this.lo = 0;            // position of events[0]
    this.kernelFirst = 0;   // oldest position the kernel still keeps
    this.exhausted = false; // nothing older exists anywhere
    this.loadingOlder = false;
    this.olderError = "";
    this.started = false;   // the first message (or reset) arrived
  }

  get hi() { return this.lo + this.events.length; }
  get size() { return this.events.length; }
  at(pos) { return this.events[pos - this.lo]; }

  /**
   * Apply one `events` message. Returns {kind, from, to}: "append" (new positions
   * [from, to); the oldest may have been dropped since, see `lo`), "rebuild" (events
   * came in before the window or replaced it: derived data must be rebuilt), "gap"
   * (a message is missing: ask the kernel) or "skip" (nothing new).
   */
  apply(msg, buffers) {
    if (Number.isInteger(msg.first)) this.kernelFirst = msg.first;
    if (msg.error) { this.loadingOlder = false; this.olderError = String(msg.error); return { kind: "skip" }; }
    const events = unpack(msg.events || [], buffers || []);
    const start = msg.start;
    if (msg.reset || !this.started) {
      this.started = true;
      this.events = events;
      this.lo = start;
      this.exhausted = !!msg.exhausted;
      this.olderError = "";
      return { kind: "rebuild" };
    }
    if (msg.older) {
      this.loadingOlder = false;
      if (msg.exhausted) this.exhausted = true;
      if (start + events.length !== this.lo) {
        // Overlap or a stale answer: keep only what is older than the window.
        const keep = Math.max(0, Math.min(events.length, this.lo - start));
        if (keep === 0) return { kind: "skip" };
        events.length = keep;
      }
      if (!events.length) return { kind: "skip" };
      // The view is bounded: an older page fills only the room left (its newest part).
      const room = this.maxEvents - this.events.length;
      if (room <= 0) {
        this.olderError = `this view holds its maximum of ${this.maxEvents.toLocaleString("en-US")} events`;
        return { kind: "skip" };
      }
      const page = events.length > room ? events.slice(events.length - room) : events;
      this.events = page.concat(this.events);
      this.lo = start + (events.length - page.length);
      if (page.length < events.length) this.olderError = "this view is full: older events were not loaded";
      return { kind: "rebuild" };
    }
    const hi = this.hi;
    if (start > hi) return { kind: "gap" };
    const skip = hi - start;
    if (skip >= events.length) return { kind: "skip" };
    for (let i = skip; i < events.length; i++) this.events.push(events[i]);
    this.trimOldest();
    return { kind: "append", from: Math.max(hi, this.lo), to: this.hi };
  }

  /** Drop the oldest events beyond maxEvents (in steps, so it happens rarely). */
  trimOldest() {
    const excess = this.events.length - this.maxEvents;
    if (excess <= 0) return false;
    const drop = Math.min(this.events.length, excess + Math.floor(this.maxEvents / 10));
    this.events.splice(0, drop);
    this.lo += drop;
    this.exhausted = false;
    return true;
  }

  /** How many events older than the window the kernel still keeps. */
  get olderInKernel() { return Math.max(0, this.lo - this.kernelFirst); }
}
