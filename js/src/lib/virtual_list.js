// A list that puts only the rows on screen in the DOM (fixed row height), with one
// Tab stop (roving tabindex), arrow keys, Home/End, PageUp/PageDown and Enter.
// Rendering is batched to one pass per animation frame.
import { h, frameScheduler } from "./dom.js";

const OVERSCAN = 8;

export class VirtualList {
  /**
   * @param {object} o
   * @param {number} o.rowHeight  pixels per row (CSS must agree)
   * @param {(i: number) => HTMLElement} o.renderRow  builds row i (of the current items)
   * @param {(i: number) => void} o.onOpen  Enter or click on row i
   * @param {string} o.label  accessible name of the list
   */
  constructor({ rowHeight, renderRow, onOpen, label, testid }) {
    this.rowHeight = rowHeight;
    this.renderRow = renderRow;
    this.onOpen = onOpen;
    this.count = 0;
    this.active = -1;       // index with the Tab stop
    this.selected = -1;     // index whose detail is open
    this.rendered = new Map(); // index -> element
    this.stick = true;      // follow new rows while scrolled to the bottom
    this.spacer = h("div", { class: "arknb-vlist-spacer" });
    this.el = h("div", { class: "arknb-rows arknb-vlist", role: "listbox", "aria-label": label, testid,
      tabindex: "-1" }, this.spacer);
    this.schedule = frameScheduler(() => this.render());
    this.el.addEventListener("scroll", () => {
      this.stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < this.rowHeight * 1.5;
      this.schedule();
    }, { passive: true });
    this.el.addEventListener("keydown", (ev) => this.onKey(ev));
    this.el.addEventListener("click", (ev) => {
      const row = ev.target.closest("[data-vindex]");
      if (!row || !this.el.contains(row)) return;
      const i = Number(row.dataset.vindex);
      this.setActive(i, false);
      this.onOpen(i);
    });
    this.el.addEventListener("focusin", (ev) => {
      const row = ev.target.closest("[data-vindex]");
      if (row) this.active = Number(row.dataset.vindex);
    });
  }

  /** The item count changed. `keepPlace`: the list grew at the end (live rows). */
  setCount(count, { reset = false } = {}) {
    const wasAtBottom = this.stick;
    this.count = count;
    if (reset) { this.active = Math.min(this.active, count - 1); this.dropAll(); }
    this.spacer.style.height = `${count * this.rowHeight}px`;
    if (this.active >= count) this.active = count - 1;
    if (wasAtBottom) this.el.scrollTop = this.el.scrollHeight;
    this.render();
  }

  /** Rows changed in place (e.g. new statuses): rebuild the visible ones. */
  refresh() { this.dropAll(); this.render(); }

  dropAll() {
    for (const el of this.rendered.values()) el.remove();
    this.rendered.clear();
  }

  visibleRange() {
    const top = this.el.scrollTop, height = this.el.clientHeight || this.rowHeight * 20;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - OVERSCAN);
    const last = Math.min(this.count - 1, Math.ceil((top + height) / this.rowHeight) + OVERSCAN);
    return [first, last];
  }

  render() {
    const [first, last] = this.visibleRange();
    for (const [i, el] of this.rendered) {
      if (i < first || i > last || i >= this.count) {
        if (el.contains(document.activeElement)) continue; // never pull focus out from under the user
        el.remove();
        this.rendered.delete(i);
      }
    }
    const fresh = [];
    for (let i = first; i <= last; i++) {
      if (this.rendered.has(i)) continue;
      const el = this.renderRow(i);
      el.dataset.vindex = String(i);
      el.setAttribute("role", "option");
      el.style.top = `${i * this.rowHeight}px`;
      el.style.height = `${this.rowHeight}px`;
      this.rendered.set(i, el);
      fresh.push(el);
    }
    if (fresh.length) this.el.append(...fresh);
    this.updateTabStops();
  }

  updateTabStops() {
    // One Tab stop: the active row if it is rendered, else the first row on screen.
    const stop = this.rendered.has(this.active) ? this.active : this.firstVisible();
    for (const [i, el] of this.rendered) {
      el.tabIndex = i === stop ? 0 : -1;
      el.setAttribute("aria-selected", String(i === this.selected));
    }
  }

  firstVisible() {
    const top = Math.ceil(this.el.scrollTop / this.rowHeight);
    return this.rendered.has(top) ? top : this.rendered.size ? Math.min(...this.rendered.keys()) : -1;
  }

  /** Make row i the Tab stop, scroll it into view and (optionally) focus it. */
  setActive(i, focus = true) {
    if (this.count === 0) return;
    i = Math.max(0, Math.min(this.count - 1, i));
    this.active = i;
    const top = i * this.rowHeight, bottom = top + this.rowHeight;
    if (top < this.el.scrollTop) this.el.scrollTop = top;
    else if (bottom > this.el.scrollTop + this.el.clientHeight) this.el.scrollTop = bottom - this.el.clientHeight;
    this.stick = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < this.rowHeight * 1.5;
    this.render();
    if (focus) this.rendered.get(i)?.focus({ preventScroll: true });
  }

  setSelected(i) {
    this.selected = i;
    this.updateTabStops();
  }

  onKey(ev) {
    if (!ev.target.closest("[data-vindex]")) return;
    const page = Math.max(1, Math.floor(this.el.clientHeight / this.rowHeight) - 1);
    const at = this.active < 0 ? 0 : this.active;
    const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: this.count - 1, PageDown: at + page, PageUp: at - page };
    if (ev.key in moves) {
      ev.preventDefault();
      this.setActive(moves[ev.key]);
    } else if (ev.key === "Enter" || ev.key === " ") {
      ev.preventDefault();
      if (this.active >= 0) this.onOpen(this.active);
    }
  }
}
