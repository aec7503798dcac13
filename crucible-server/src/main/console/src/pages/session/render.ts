// A cell's answer as elements: text as text, images as images of data: URLs, HTML and SVG in frames that can run
// nothing (an opaque origin: no script, no form, no navigation of the console).
import type { CellResult } from "@crucible/sdk";
import { el } from "../../ui/dom";
import { duration } from "../../ui/format";

export function renderCell(r: CellResult): HTMLElement[] {
  const out: HTMLElement[] = [];
  if (r.stdout) out.push(text(r.stdout));
  if (r.stderr) out.push(text(r.stderr, "err"));
  for (const d of r.display ?? []) {
    if (d.mime === "image/png" || d.mime === "image/jpeg") {
      out.push(el("img", { src: `data:${d.mime};base64,${d.data}`, alt: "a figure" }));
    } else if (d.mime === "text/html" || d.mime === "image/svg+xml") {
      const frame = el("iframe", { sandbox: "", title: d.mime });
      frame.srcdoc =
        d.mime === "text/html"
          ? d.data
          : `<img src="data:image/svg+xml;base64,${btoa(String.fromCharCode(...new TextEncoder().encode(d.data)))}">`;
      out.push(frame);
    } else {
      out.push(text(d.data));
    }
  }
  if (r.result !== undefined && r.result !== null) out.push(text(`Out[${r.execution_count}]: ${r.result}`));
  if (r.error) out.push(text(r.error.traceback || `${r.error.name}: ${r.error.message}`, "err"));
  out.push(
    el(
      "div",
      { class: "meta" },
      [
        `[${r.execution_count}]`,
        r.status,
        duration(r.wall_ms),
        r.resumed ? "resumed" : "",
        r.restarted ? "interpreter restarted" : "",
        r.stdout_truncated || r.stderr_truncated ? "output cut at its cap" : "",
      ]
        .filter(Boolean)
        .join(" · "),
    ),
  );
  return out;
}

export function text(value: string, kind = ""): HTMLPreElement {
  return el("pre", { class: `out ${kind}`.trim() }, value);
}
