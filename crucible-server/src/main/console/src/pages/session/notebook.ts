// The notebook: cells run in the session's interpreter one after another (Ctrl-Enter), each with its answer.
import type { Session } from "@crucible/sdk";
import { describe } from "../../api/client";
import { el } from "../../ui/dom";
import { renderCell, text } from "./render";

export class Notebook {
  private readonly cells = el("div", { id: "cells" });
  private readonly input = el("textarea", {
    id: "cell",
    rows: 5,
    spellcheck: "false",
    "aria-label": "cell",
    placeholder: "a cell: Ctrl-Enter runs it",
  });
  readonly element = el(
    "div",
    { class: "notebook" },
    this.cells,
    this.input,
    el("button", { id: "cell-run", class: "primary", title: "Ctrl-Enter", onclick: () => void this.run() }, "Run cell"),
  );

  constructor(
    private readonly session: Session,
    private readonly ran: () => void,
  ) {
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void this.run();
      }
    });
  }

  private async run(): Promise<void> {
    const code = this.input.value;
    if (!code.trim()) return;
    const cell = el("div", { class: "cell" }, el("pre", { class: "code" }, code));
    this.cells.append(cell);
    this.input.value = "";
    try {
      cell.append(...renderCell(await this.session.run(code)));
    } catch (e) {
      cell.append(text(describe(e), "err"));
    }
    cell.dataset.done = "true";
    this.ran();
  }
}
