// The chat's typed answers and cut answers (arknb/widgets/_chat_output.py, DESIGN §17):
// an assistant entry with `output` ({name, value}) shows the answer as a small field
// table (its raw JSON folded below), and one with `truncated` carries a "cut short" mark.
// Values are text nodes only (h() never parses HTML): a model's answer cannot inject markup.
import { h, setChildren } from "./lib/dom.js";

const MAX_ROWS = 50;

function cell(value) {
  if (typeof value === "string") return h("td", {}, value);
  return h("td", {}, h("code", {}, JSON.stringify(value)));
}

function rows(value) {
  if (value !== null && typeof value === "object") {
    return Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  }
  return [["value", value]];
}

/** The typed answer as a table (null when there is none). */
export function outputTable(output) {
  if (!output || typeof output !== "object") return null;
  const all = rows(output.value);
  const shown = all.slice(0, MAX_ROWS).map(([k, v]) => h("tr", { testid: "arknb-output-row" },
    h("th", { scope: "row" }, k), cell(v)));
  return h("div", { class: "arknb-output", testid: "arknb-output" },
    h("div", { class: "arknb-muted arknb-output-head" }, "typed answer · ", h("code", {}, String(output.name || ""))),
    h("table", { class: "arknb-output-table" }, h("tbody", {}, shown)),
    all.length > MAX_ROWS ? h("div", { class: "arknb-muted" }, `… ${all.length - MAX_ROWS} more`) : null);
}

/** Fill an assistant entry's output slot (the table goes in the slot, the "cut short" mark
 *  at the end of the slot's bubble, after the text); returns true when the raw text should
 *  fold away (a typed answer shows as its table). */
export function fillOutput(slot, e) {
  const table = outputTable(e.output);
  setChildren(slot, table);
  slot.hidden = !table;
  const bubble = slot.parentNode;
  let mark = bubble ? bubble.querySelector(":scope > .arknb-truncated") : null;
  if (e.truncated && !mark && bubble) {
    mark = h("div", { class: "arknb-truncated", testid: "arknb-truncated",
      title: "The model stopped at max_tokens (finish reason \"length\"): the answer is incomplete." },
    "cut short: the answer reached max_tokens");
    bubble.append(mark);
  } else if (!e.truncated && mark) {
    mark.remove();
  }
  return !!table;
}
