// A stale chat's way to the live one (issue 25 item 4): when a newer chat of the same
// session is on the same page (a notebook re-run shows both), the stale chat's banner
// offers "Go to the live chat": it scrolls there and puts the cursor in its input.

import { h } from "./dom.js";

/** The live (not detached) chat view of `session` on this page other than `self`: the
 *  first after `self` in document order, else the last before it; null if there is none. */
export function findLiveChat(self, session) {
  if (!session) return null;
  const live = [...document.querySelectorAll('[data-testid="arknb-chat"]')]
    .filter((n) => n !== self && n.dataset.session === session && n.dataset.detached === "false");
  return live.find((n) => self.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_FOLLOWING)
    || live[live.length - 1] || null;
}

/** The link, shown only while `self` is detached and a live chat of its session is on the
 *  page (looked for again when the banner changes, when the pointer comes over the stale
 *  chat, and a few times after it is detached: the live view is drawn after the takeover). */
export function liveChatLink(self, session) {
  const link = h("button", { class: "arknb-btn arknb-link arknb-live-link", testid: "arknb-go-live", type: "button",
    hidden: true, title: "Scroll to the chat that took over this session" }, "Go to the live chat");
  let detached = false;
  let retries = [];
  const check = () => { link.hidden = !(detached && findLiveChat(self, session())); };
  link.addEventListener("click", () => {
    const live = findLiveChat(self, session());
    check();
    if (!live) return;
    live.scrollIntoView({ block: "center" });
    const input = live.querySelector('[data-testid="arknb-input"]');
    if (input) input.focus({ preventScroll: true });
  });
  self.addEventListener("pointerenter", check);
  return {
    root: link,
    update(isDetached) {
      if (isDetached && !detached) retries = [300, 1000, 3000].map((ms) => setTimeout(check, ms));
      if (!isDetached) { retries.forEach(clearTimeout); retries = []; }
      detached = isDetached;
      check();
    },
  };
}
