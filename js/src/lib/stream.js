// Offset-stamped deltas (see arknb/widgets/_protocol.py). Offsets count code points,
// as Python's len() does, so an emoji split across chunks lines up on both sides.

export function cpLength(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function cpSlice(s, from) {
  if (from <= 0) return s;
  return Array.from(s).slice(from).join("");
}

/**
 * Apply one op [field, entryId, start, end, text] to `entries` (Map id -> entry) with
 * `lengths` (Map id -> {field: codePoints}). Returns "applied", "skipped" or "gap".
 */
export function applyOp(entries, lengths, op) {
  const [field, id, start, end, text] = op;
  const entry = entries.get(id);
  if (!entry) return "gap";
  let lens = lengths.get(id);
  if (!lens) { lens = {}; lengths.set(id, lens); }
  if (lens[field] === undefined) lens[field] = cpLength(entry[field] || "");
  const have = lens[field];
  if (end <= have) return "skipped";
  if (start > have) return "gap";
  entry[field] = (entry[field] || "") + (start === have ? text : cpSlice(text, have - start));
  lens[field] = end;
  return "applied";
}
