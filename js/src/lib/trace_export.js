// The Export button's file: the DESIGN §11 trace format that arknb.eval.trace.from_jsonl
// reads (and TimelineWidget.to_jsonl writes): a header line, then one event per line.

/** Version of the trace format (arknb/eval/trace.py TRACE_VERSION). */
export const TRACE_VERSION = 1;

/** The text of a trace file holding `events` (in order); `dropped` older events of the
 *  session are not in it (the view no longer holds them), and the header says so. */
export function traceJsonl(events, dropped = 0) {
  const lines = events.map((e) => JSON.stringify(e));
  const first = events.length ? events[0].sequence : null;
  // (No arknb_version: the view does not know the kernel's; from_jsonl does not need it.)
  const header = JSON.stringify({ arknb_trace: TRACE_VERSION,
    created_at: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"), events: events.length, dropped,
    first_sequence: first ?? null });
  return [header, ...lines].join("\n") + "\n";
}
