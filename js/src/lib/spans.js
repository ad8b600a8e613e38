// The id and name of the tool call in an event payload (compare.js reads calls with
// it). The timeline's nested spans are built by timeline_index.js.
export function callOf(payload) {
  const c = (payload && payload.call) || {};
  return { id: String(c.id ?? ""), name: String(c.name ?? "?") };
}
