// Markdown for untrusted model and tool text: marked, then DOMPurify, then a DOM
// fragment. Nothing here assigns HTML to a live element; the sanitizer's output is a
// fragment that is inserted with replaceChildren.
//
// Raw HTML in the text is shown as text, never parsed: "Never trust <script> tags" must
// keep every word (a parsed <script> would swallow the rest of the answer, and the
// sanitizer would then drop it whole). arknb/widgets/_static_html.py renders the same way.
import { Marked } from "marked";
import DOMPurify from "dompurify";

const escapeHtml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
  .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
const marked = new Marked({ gfm: true, breaks: true, renderer: { html: ({ text }) => escapeHtml(text) } });

const SAFE_HREF = /^(https?:|mailto:|#)/i;
const SAFE_IMG = /^data:image\/(png|gif|jpeg|webp);/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = (node.getAttribute("href") || "").trim();
    if (!SAFE_HREF.test(href)) node.removeAttribute("href");
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

const CONFIG = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe",
    "object", "embed", "svg", "math", "link", "meta", "base", "video", "audio", "source"],
  FORBID_ATTR: ["style", "id", "name", "srcset", "action", "formaction"],
};

/** A sanitized DocumentFragment for markdown `text` (images only as inline data). */
export function markdownFragment(text) {
  let html;
  try {
    html = marked.parse(String(text ?? ""), { async: false });
  } catch {
    const frag = document.createDocumentFragment();
    frag.append(document.createTextNode(String(text ?? "")));
    return frag;
  }
  const frag = DOMPurify.sanitize(html.trim(), CONFIG);
  // Workshops are offline and a remote image is a request we did not ask for:
  // keep only inline data images, show the alt text for the rest.
  for (const img of frag.querySelectorAll("img")) {
    if (!SAFE_IMG.test(img.getAttribute("src") || "")) {
      const alt = document.createElement("span");
      alt.className = "arknb-img-blocked";
      alt.textContent = `[image${img.getAttribute("alt") ? ": " + img.getAttribute("alt") : ""}]`;
      img.replaceWith(alt);
    }
  }
  return frag;
}

/** Replace `el`'s children with the sanitized markdown of `text`. */
export function renderMarkdown(el, text) {
  el.replaceChildren(markdownFragment(text));
}
