// Collapsible JSON tree built from DOM nodes and text (no HTML parsing).
import { h } from "./dom.js";

export function jsonView(value, { openDepth = 1 } = {}) {
  return h("div", { class: "arknb-json", testid: "arknb-json" }, node(null, value, 0, openDepth));
}

function leaf(value) {
  const type = value === null ? "null" : typeof value;
  return h("span", { class: `arknb-json-${type}` }, type === "string" ? JSON.stringify(value) : String(value));
}

function node(key, value, depth, openDepth) {
  const label = key === null ? null : h("span", { class: "arknb-json-key" }, `${key}: `);
  if (value === null || typeof value !== "object") return h("div", { class: "arknb-json-row" }, label, leaf(value));
  const isArray = Array.isArray(value);
  const keys = isArray ? value.map((_, i) => i) : Object.keys(value);
  if (keys.length === 0) return h("div", { class: "arknb-json-row" }, label, isArray ? "[]" : "{}");
  const details = h("details", { class: "arknb-json-node" },
    h("summary", {}, label, h("span", { class: "arknb-json-meta" }, isArray ? `[${keys.length}]` : `{${keys.length}}`)),
    keys.map((k) => node(k, value[k], depth + 1, openDepth)));
  if (depth < openDepth) details.open = true;
  return details;
}
