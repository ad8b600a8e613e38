// "What the model saw" (DESIGN §16): an llm.before event's context changes, each shown
// as a diff against the raw history — the history's messages it replaced (−) and what
// the request held instead (+) — rather than the history and the request side by side.
import { h } from "./dom.js";

const KIND_WORD = { instructions: "instructions put in front", summary: "replaced by a summary",
  rewrite: "rewritten", insert: "inserted", drop: "left out" };

function lines(sign, items) {
  return (Array.isArray(items) ? items : []).map((m) =>
    h("div", { class: `arknb-ctx-line arknb-ctx-${sign === "+" ? "add" : "del"}`, testid: `arknb-ctx-${sign === "+" ? "add" : "del"}` },
      h("span", { class: "arknb-ctx-sign" }, sign), h("span", { class: "arknb-ctx-role" }, String(m.role || "")),
      " ", String(m.text ?? "")));
}

function where(change) {
  const [a, b] = Array.isArray(change.range) ? change.range : [0, 0];
  if (change.kind === "instructions") return "before the history";
  if (a === b) return `before history message ${a + 1}`;
  return b - a === 1 ? `history message ${a + 1}` : `history messages ${a + 1}–${b}`;
}

/** The context view of `context` ({version, changes}) from an llm.before payload, or null. */
export function contextView(context) {
  if (!context || !Array.isArray(context.changes) || context.changes.length === 0) return null;
  return h("div", { class: "arknb-ctx", testid: "arknb-context-view" },
    h("div", { class: "arknb-ctx-head" }, h("strong", {}, "What the model saw"),
      ` · built from ${context.version ?? "?"} history messages · ${context.changes.length} change(s)`),
    ...context.changes.map((c) => h("div", { class: "arknb-ctx-change", testid: "arknb-context-change",
      dataset: { kind: String(c.kind || ""), source: String(c.source || "") } },
      h("div", { class: "arknb-ctx-what" }, h("span", { class: "arknb-badge" }, String(c.source || "?")), " ",
        `${where(c)}: ${KIND_WORD[c.kind] || c.kind}`),
      ...lines("−", c.before), ...lines("+", c.after))));
}
