// A live view hides its widget's static HTML companion (arknb/widgets/_static_html.py):
// one style rule per static id, counted, so two views of one model share it and the
// companion shows again once the last view is gone (the widget was closed).
const counts = new Map();

/** Hide the companion tagged `staticId` while this view lives; returns the cleanup. */
export function hideStaticTwin(staticId) {
  if (typeof staticId !== "string" || !/^[0-9a-f]{8,64}$/.test(staticId) || typeof document === "undefined") {
    return () => {};
  }
  let entry = counts.get(staticId);
  if (!entry) {
    const style = document.createElement("style");
    style.dataset.arknbTwin = staticId;
    const sel = `[data-arknb-static="${staticId}"]`;
    // JupyterLab: hide the whole output (prompt and padding); elsewhere the block itself.
    style.textContent = `${sel}{display:none!important}` +
      `.jp-OutputArea-child:has(${sel}){display:none!important}`;
    document.head.append(style);
    entry = { style, n: 0 };
    counts.set(staticId, entry);
  }
  entry.n += 1;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    entry.n -= 1;
    if (entry.n === 0) { entry.style.remove(); counts.delete(staticId); }
  };
}
