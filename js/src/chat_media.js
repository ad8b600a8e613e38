// Images and documents in the chat (arknb/widgets/_chat_media.py; DESIGN §17).
//
// mediaParts(parts): a user entry's images as thumbnails and documents as named chips. An
// image is drawn only from inline raster data (PNG, JPEG, GIF, WebP), checked here again:
// the page never fetches a URL, and an SVG (markup that can carry script) is never drawn.
//
// attachmentTray(...): the send box's attachments. Files come from a paste, a drop or the
// paperclip button; one over the chat's cap (the max_attachment_bytes trait) is refused with
// its size and the cap, before it is read. The kernel checks the cap again.
import { h } from "./lib/dom.js";

export const SAFE_IMAGE_SRC = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}$/;

/** Bytes for people, as the kernel words them: "512 B", "12.3 KB", "30.0 MB". */
export function sizeText(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

function chip(part) {
  const detail = part.as_text ? `text, ${Number(part.chars || 0).toLocaleString("en-US")} characters`
    : [part.mime_type, part.bytes != null ? sizeText(part.bytes) : ""].filter(Boolean).join(" · ");
  return h("span", { class: "arknb-chip", testid: "arknb-doc-chip", title: detail || null },
    h("b", {}, part.name || "document"), detail ? h("span", { class: "arknb-muted" }, ` (${detail})`) : null);
}

function thumbnail(part) {
  const src = typeof part.src === "string" ? part.src : "";
  if (!SAFE_IMAGE_SRC.test(src)) {
    const why = part.blocked || "not an inline raster image";
    return h("span", { class: "arknb-chip arknb-chip-blocked", testid: "arknb-image-blocked", title: why },
      "image ", part.name ? h("b", {}, part.name) : null, h("span", { class: "arknb-muted" }, ` — ${why}`));
  }
  const img = h("img", { class: "arknb-thumb", testid: "arknb-thumb", alt: part.name || "image", src,
    title: [part.name, part.bytes != null ? sizeText(part.bytes) : ""].filter(Boolean).join(" · ") || null,
    tabindex: "0", role: "button", "aria-expanded": "false" });
  const toggle = () => {
    const open = img.classList.toggle("arknb-thumb-open");
    img.setAttribute("aria-expanded", String(open));
  };
  img.addEventListener("click", toggle);
  img.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(); } });
  return img;
}

/** A user entry's images and documents, or null when it has none. */
export function mediaParts(parts) {
  if (!Array.isArray(parts) || parts.length === 0) return null;
  return h("div", { class: "arknb-parts", testid: "arknb-parts" },
    parts.map((p) => (p && p.kind === "image" ? thumbnail(p) : chip(p || {}))));
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

/**
 * The send box's attachments: `root` (the chips, with a remove button each, and the refusal
 * line), `button` (the paperclip), `bind(dropTarget, input)` for paste and drop, `files()`
 * for the send action, `clear()`, and `busy()` while a file is still being read.
 */
export function attachmentTray(cap, onChange) {
  let items = [];
  let reading = 0;
  const chips = h("div", { class: "arknb-attachments", testid: "arknb-attachments" });
  const error = h("div", { class: "arknb-error arknb-attach-error", testid: "arknb-attach-error", role: "alert" });
  const picker = h("input", { type: "file", multiple: true, hidden: true, testid: "arknb-attach-input" });
  const button = h("button", { class: "arknb-btn", testid: "arknb-attach", type: "button",
    title: "Attach images or files (or paste / drop them into the box)", "aria-label": "Attach files" }, "Attach");
  const root = h("div", { class: "arknb-attach-tray" }, chips, error, picker);

  function render() {
    chips.replaceChildren(...items.map((it, i) => {
      const remove = h("button", { class: "arknb-btn arknb-link", type: "button", testid: "arknb-attach-remove",
        "aria-label": `Remove ${it.name}` }, "×");
      remove.addEventListener("click", () => { items = items.filter((_, j) => j !== i); render(); });
      const preview = it.mime_type.startsWith("image/") && SAFE_IMAGE_SRC.test(`data:${it.mime_type};base64,${it.data}`)
        ? h("img", { class: "arknb-thumb arknb-thumb-small", alt: it.name, src: `data:${it.mime_type};base64,${it.data}` })
        : null;
      return h("span", { class: "arknb-chip", testid: "arknb-attachment", "data-name": it.name }, preview,
        h("b", {}, it.name), h("span", { class: "arknb-muted" }, ` (${sizeText(it.size)})`), remove);
    }));
    chips.hidden = items.length === 0;
    error.hidden = !error.textContent;
    onChange();
  }

  async function add(fileList) {
    const limit = Number(cap()) || 0;
    const refused = [];
    const files = [...(fileList || [])];
    reading += files.length;
    onChange();
    for (const file of files) {
      try {
        const name = file.name || "pasted";
        if (limit && file.size > limit) {
          refused.push(`${name} is ${sizeText(file.size)}, over this chat's ${sizeText(limit)} cap per file; `
            + "it was not attached");
          continue;
        }
        const data = await readBase64(file);
        items.push({ name, mime_type: file.type || "application/octet-stream", data, size: file.size });
      } catch (err) {
        refused.push(`${file.name || "a file"} could not be read: ${err && err.message ? err.message : err}`);
      } finally {
        reading -= 1;
      }
    }
    error.textContent = refused.join("\n");
    render();
  }

  function bind(dropTarget, input) {
    button.addEventListener("click", () => picker.click());
    picker.addEventListener("change", () => { add(picker.files); picker.value = ""; });
    input.addEventListener("paste", (ev) => {
      const files = ev.clipboardData ? [...ev.clipboardData.files] : [];
      if (files.length === 0) return; // plain text pastes as usual
      ev.preventDefault();
      add(files);
    });
    dropTarget.addEventListener("dragover", (ev) => {
      if (ev.dataTransfer && [...ev.dataTransfer.types].includes("Files")) {
        ev.preventDefault();
        dropTarget.classList.add("arknb-drop-over");
      }
    });
    dropTarget.addEventListener("dragleave", () => dropTarget.classList.remove("arknb-drop-over"));
    dropTarget.addEventListener("drop", (ev) => {
      dropTarget.classList.remove("arknb-drop-over");
      const files = ev.dataTransfer ? [...ev.dataTransfer.files] : [];
      if (files.length === 0) return;
      ev.preventDefault();
      add(files);
    });
  }

  chips.hidden = error.hidden = true; // (no onChange yet: the view is still being built)
  return {
    root, button, bind, add,
    files: () => items.map(({ name, mime_type, data }) => ({ name, mime_type, data })),
    clear: () => { items = []; error.textContent = ""; render(); },
    busy: () => reading > 0,
    disable: (off) => { button.disabled = off; },
  };
}
