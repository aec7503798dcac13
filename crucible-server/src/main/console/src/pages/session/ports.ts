// What listens in the session, each with a preview: a signed link the server fences off from the console, opened in
// a tab of its own.
import type { PortInfo, Session } from "@crucible/sdk";
import { describe } from "../../api/client";
import { announce, el } from "../../ui/dom";
import { Table } from "../../ui/table";

export class PortsPanel {
  private readonly table = new Table<PortInfo>({
    id: "ports",
    key: (p) => String(p.port),
    sort: { key: "port", descending: false },
    empty: "Nothing listens.",
    columns: [
      { key: "port", label: "port", numeric: true, value: (p) => p.port },
      {
        key: "preview",
        label: "preview",
        value: () => "",
        show: (p) =>
          el(
            "button",
            {
              class: "preview-make",
              onclick: (e: Event) => void this.preview(p, e.currentTarget as HTMLButtonElement),
            },
            "preview",
          ),
      },
    ],
  });
  readonly element = el(
    "div",
    { id: "tab-ports", class: "tab" },
    el(
      "p",
      { class: "status" },
      "What listens in the session. A preview is a signed link that opens in a tab of its",
      " own, fenced off from this page.",
    ),
    el("button", { id: "ports-refresh", title: "refresh", onclick: () => void this.list() }, "↻"),
    this.table.element,
  );

  constructor(
    private readonly session: Session,
    private readonly say: (text: string, bad?: boolean) => void,
  ) {}

  async list(): Promise<void> {
    try {
      const ports = await this.session.ports();
      this.table.set(ports);
      announce("ports", ports.length);
    } catch (e) {
      this.say(describe(e), true);
    }
  }

  private async preview(p: PortInfo, button: HTMLButtonElement): Promise<void> {
    try {
      const link = await this.session.preview(p.port);
      // the server's answer, as a link's address: never markup
      button.replaceWith(
        el(
          "a",
          {
            href: new URL(link.url, location.href).href,
            target: "_blank",
            rel: "noopener noreferrer",
            class: "preview",
          },
          "open ↗",
        ),
      );
    } catch (e) {
      this.say(describe(e), true);
    }
  }
}
