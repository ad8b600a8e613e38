// Line diff (LCS) for hook before/after values, rendered as text only.
import { h, prettyJson } from "./dom.js";

const MAX_CELLS = 400000;

/** [["=", line] | ["-", line] | ["+", line], ...] turning `a` into `b`. */
export function diffLines(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const n = x.length, m = y.length;
  if (n * m > MAX_CELLS) return [...x.map((l) => ["-", l]), ...y.map((l) => ["+", l])];
  const dp = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      dp[i][j] = x[i] === y[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push(["=", x[i]]); i++; j++; }
    else if (dp[i + 1][j] >= dp[i][j + 1]) out.push(["-", x[i++]]);
    else out.push(["+", y[j++]]);
  }
  while (i < n) out.push(["-", x[i++]]);
  while (j < m) out.push(["+", y[j++]]);
  return out;
}

/** A <pre> showing the diff of two values (pretty JSON when they are JSON). */
export function diffView(before, after) {
  const lines = diffLines(prettyJson(before ?? ""), prettyJson(after ?? ""));
  return h("pre", { class: "arknb-diff", testid: "arknb-diff" },
    lines.map(([op, line]) => h("span", {
      class: op === "+" ? "arknb-diff-add" : op === "-" ? "arknb-diff-del" : "arknb-diff-same",
    }, `${op === "=" ? " " : op} ${line}\n`)));
}
