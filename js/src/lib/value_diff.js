// Structured diff of two JSON values, for hook decisions: objects key by key, arrays
// element by element, long or multi-line strings line by line, and strings holding
// JSON (a tool call's arguments_json) diffed as the values they encode. Rendered as
// DOM text only.
import { h } from "./dom.js";
import { diffLines } from "./diff.js";

const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const LONG = 80;
const MAX_ARRAY_LCS = 400;

function stable(v) {
  try { return JSON.stringify(v); } catch { return String(v); }
}

export function deepEqual(a, b) { return a === b || stable(a) === stable(b); }

/** A string that holds a JSON object or array, parsed; anything else: undefined. */
function parsedJson(s) {
  if (typeof s !== "string") return undefined;
  const t = s.trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return undefined;
  try { return JSON.parse(t); } catch { return undefined; }
}

/**
 * The diff of `a` -> `b` as a tree:
 *  {kind: "same", value} | {kind: "object", entries: [{key, op: "="|"-"|"+"|"~", value?, diff?}]}
 *  {kind: "array", entries: [{index, op, value?, diff?}]} | {kind: "lines", lines: [[op, line]]}
 *  {kind: "json", diff} (both strings held JSON) | {kind: "scalar", before, after}
 */
export function diffValues(a, b) {
  if (deepEqual(a, b)) return { kind: "same", value: a };
  const pa = parsedJson(a), pb = parsedJson(b);
  if (pa !== undefined && pb !== undefined) return { kind: "json", diff: diffValues(pa, pb) };
  if (isObj(a) && isObj(b)) {
    const entries = [];
    for (const key of Object.keys(a)) {
      if (!(key in b)) entries.push({ key, op: "-", value: a[key] });
      else if (deepEqual(a[key], b[key])) entries.push({ key, op: "=", value: a[key] });
      else entries.push({ key, op: "~", diff: diffValues(a[key], b[key]) });
    }
    for (const key of Object.keys(b)) if (!(key in a)) entries.push({ key, op: "+", value: b[key] });
    return { kind: "object", entries };
  }
  if (Array.isArray(a) && Array.isArray(b)) return { kind: "array", entries: diffArrays(a, b) };
  if (typeof a === "string" && typeof b === "string" && (a.includes("\n") || b.includes("\n") || a.length > LONG || b.length > LONG)) {
    return { kind: "lines", lines: diffLines(a, b) };
  }
  return { kind: "scalar", before: a, after: b };
}

function diffArrays(a, b) {
  if (!a.length || !b.length) {
    return [...a.map((value, index) => ({ index, op: "-", value })), ...b.map((value, index) => ({ index, op: "+", value }))];
  }
  if (a.length * b.length > MAX_ARRAY_LCS * MAX_ARRAY_LCS) {
    // Too long for an LCS: compare position by position.
    const out = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (i >= b.length) out.push({ index: i, op: "-", value: a[i] });
      else if (i >= a.length) out.push({ index: i, op: "+", value: b[i] });
      else if (deepEqual(a[i], b[i])) out.push({ index: i, op: "=", value: a[i] });
      else out.push({ index: i, op: "~", diff: diffValues(a[i], b[i]) });
    }
    return out;
  }
  const ka = a.map(stable), kb = b.map(stable);
  const ops = diffLines(ka.join("\n"), kb.join("\n"));
  // diffLines works on lines: each element's JSON has no newline, so elements map 1:1.
  const out = [];
  let i = 0, j = 0;
  for (let k = 0; k < ops.length; k++) {
    const [op] = ops[k];
    if (op === "=") { out.push({ index: j, op: "=", value: b[j] }); i++; j++; }
    else if (op === "-" && k + 1 < ops.length && ops[k + 1][0] === "+" && (isObj(a[i]) || Array.isArray(a[i]))) {
      // A removed element right before an added one: show it as a change.
      out.push({ index: j, op: "~", diff: diffValues(a[i], b[j]) }); i++; j++; k++;
    } else if (op === "-") { out.push({ index: i, op: "-", value: a[i] }); i++; }
    else { out.push({ index: j, op: "+", value: b[j] }); j++; }
  }
  return out;
}

/** Counts of changed, added and removed leaves (for a one-line headline). */
export function diffStats(d) {
  const s = { changed: 0, added: 0, removed: 0 };
  const walk = (n) => {
    if (!n) return;
    if (n.kind === "scalar") s.changed++;
    else if (n.kind === "json") walk(n.diff);
    else if (n.kind === "lines") for (const [op] of n.lines) { if (op === "+") s.added++; else if (op === "-") s.removed++; }
    else if (n.kind === "object" || n.kind === "array") {
      for (const e of n.entries) {
        if (e.op === "+") s.added++; else if (e.op === "-") s.removed++; else if (e.op === "~") walk(e.diff);
      }
    }
  };
  walk(d);
  return s;
}

function valueText(v) {
  if (typeof v === "string") return JSON.stringify(v);
  try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
}

function renderNode(d) {
  switch (d.kind) {
    case "same": return h("span", { class: "arknb-diff-same" }, valueText(d.value));
    case "scalar":
      return h("span", {}, h("span", { class: "arknb-diff-del", testid: "arknb-diff-before" }, valueText(d.before)),
        " → ", h("span", { class: "arknb-diff-add", testid: "arknb-diff-after" }, valueText(d.after)));
    case "lines":
      return h("pre", { class: "arknb-diff arknb-diff-lines" }, d.lines.map(([op, line]) => h("span", {
        class: op === "+" ? "arknb-diff-add" : op === "-" ? "arknb-diff-del" : "arknb-diff-same",
      }, `${op === "=" ? " " : op} ${line}\n`)));
    case "json":
      return h("span", {}, h("span", { class: "arknb-muted" }, "(JSON text) "), renderNode(d.diff));
    default: {
      const same = d.entries.filter((e) => e.op === "=");
      const rows = d.entries.filter((e) => e.op !== "=").map((e) => {
        const label = h("span", { class: "arknb-json-key" }, `${d.kind === "array" ? `[${e.index}]` : e.key}: `);
        const cls = e.op === "+" ? "arknb-diff-add" : e.op === "-" ? "arknb-diff-del" : "";
        const body = e.op === "~" ? renderNode(e.diff) : h("span", { class: cls }, valueText(e.value));
        return h("li", { class: `arknb-diff-entry arknb-diff-op-${e.op === "~" ? "change" : e.op === "+" ? "add" : "del"}`,
          testid: "arknb-diff-entry", "data-key": String(d.kind === "array" ? e.index : e.key) },
        h("span", { class: "arknb-diff-mark" }, e.op === "~" ? "~" : e.op), " ", label, body);
      });
      const unchanged = same.length ? h("li", { class: "arknb-diff-unchanged" }, h("details", {},
        h("summary", { class: "arknb-muted" }, `${same.length} unchanged`),
        h("ul", { class: "arknb-diff-tree" }, same.map((e) => h("li", {},
          h("span", { class: "arknb-json-key" }, `${d.kind === "array" ? `[${e.index}]` : e.key}: `),
          h("span", { class: "arknb-diff-same" }, valueText(e.value))))))) : null;
      return h("ul", { class: "arknb-diff-tree" }, rows, unchanged);
    }
  }
}

/** The structured diff of `before` -> `after` as DOM (data-testid="arknb-diff"). */
export function valueDiffView(before, after) {
  return h("div", { class: "arknb-diff arknb-value-diff", testid: "arknb-diff" }, renderNode(diffValues(before, after)));
}
