// One open session: its actions (pause, resume, fork, snapshot, delete), its info, the notebook and terminal, and
// tabs of its files, processes and ports. Everything of the session lives here and goes with it.
import type { Session, SessionInfo } from "@crucible/sdk";
import { describe } from "../../api/client";
import { el, statusLine } from "../../ui/dom";
import { bytes, duration } from "../../ui/format";
import { FilesPanel } from "./files";
import { SessionInfoPanel } from "./info";
import { Notebook } from "./notebook";
import { PortsPanel } from "./ports";
import { ProcessesPanel } from "./processes";
import { TerminalPanel } from "./terminal";

export interface ViewHooks {
  /** The session changed in a way the list shows (state, a fork made). */
  changed(): void;
  /** The session was deleted. */
  gone(): void;
  /** A snapshot of it was taken. */
  snapshotted(): void;
}

export class SessionView {
  readonly element: HTMLElement;
  private readonly status = statusLine("session-status");
  private readonly info = new SessionInfoPanel();
  private readonly terminal: TerminalPanel;
  private readonly files: FilesPanel;
  private readonly processes: ProcessesPanel;
  private readonly ports: PortsPanel;

  constructor(
    private readonly session: Session,
    info: SessionInfo,
    private readonly hooks: ViewHooks,
  ) {
    const say = (text: string, bad?: boolean) => this.status.say(text, bad);
    this.terminal = new TerminalPanel(session);
    this.files = new FilesPanel(session, say);
    this.processes = new ProcessesPanel(session, say, () => void this.refreshInfo());
    this.ports = new PortsPanel(session, say);
    const notebook = new Notebook(session, () => void this.refresh());
    const snapshotName = el("input", {
      id: "snapshot-name",
      placeholder: "snapshot name",
      "aria-label": "snapshot name",
    });
    this.element = el(
      "div",
      { class: "session" },
      el(
        "div",
        { class: "bar" },
        el("h2", { class: "title" }, "Session ", el("code", {}, session.id)),
        this.action("session-pause", "Pause", "pause", async () => {
          const r = await session.pause();
          return `${r.state} in ${duration(r.took_ms)}${r.keeps ? `, keeps its ${r.keeps}` : ""}`;
        }),
        this.action("session-resume", "Resume", "resume", async () => {
          const r = await session.resume();
          return `${r.state} in ${duration(r.took_ms)}${r.restored ? `, ${r.restored} restored` : ""}`;
        }),
        this.action("session-fork", "Fork", "fork", async () => {
          const forks = await session.fork(1);
          return `made ${forks.map((f) => f.id).join(", ")}`;
        }),
        el(
          "form",
          { class: "inline", onsubmit: (e: Event) => e.preventDefault() },
          snapshotName,
          this.action("session-snapshot", "Snapshot", "snapshot", async () => {
            const s = await session.snapshot(snapshotName.value.trim());
            snapshotName.value = "";
            this.hooks.snapshotted();
            return `${s.name} (${bytes(s.bytes)}), keeps its ${s.keeps}`;
          }),
        ),
        el("button", { id: "session-delete", class: "danger", onclick: () => void this.remove() }, "Delete"),
      ),
      this.status.element,
      el(
        "div",
        { class: "columns" },
        el("div", { class: "main" }, notebook.element, this.terminal.element),
        el("aside", { class: "side" }, el("h2", {}, "About"), this.info.element, this.tabs()),
      ),
    );
    this.info.update(info);
  }

  get id(): string {
    return this.session.id;
  }

  /** Reads the session's info and files. */
  async start(): Promise<void> {
    await this.refresh();
  }

  close(): void {
    this.terminal.close();
  }

  private async refresh(): Promise<void> {
    await Promise.all([this.refreshInfo(), this.files.list()]);
  }

  private async refreshInfo(): Promise<void> {
    try {
      this.info.update(await this.session.refresh());
      this.hooks.changed(); // the list shows its state too (a cell brings a paused session back)
    } catch (e) {
      this.status.say(describe(e), true);
    }
  }

  private action(id: string, label: string, verb: string, act: () => Promise<string>): HTMLButtonElement {
    return el(
      "button",
      {
        id,
        type: "button",
        onclick: async () => {
          try {
            this.status.say(`${verb}: ${await act()}`);
            await this.refresh();
          } catch (e) {
            this.status.say(`${verb}: ${describe(e)}`, true);
          }
        },
      },
      label,
    );
  }

  private async remove(): Promise<void> {
    try {
      this.close();
      await this.session.delete();
      this.hooks.gone();
    } catch (e) {
      this.status.say(describe(e), true);
    }
  }

  private tabs(): HTMLElement {
    const panels = { files: this.files, processes: this.processes, ports: this.ports };
    const buttons = Object.keys(panels).map((name) =>
      el(
        "button",
        { type: "button", role: "tab", "data-tab": name, class: name === "files" ? "active" : undefined },
        name[0].toUpperCase() + name.slice(1),
      ),
    );
    for (const button of buttons) {
      button.addEventListener("click", () => {
        for (const other of buttons) other.classList.toggle("active", other === button);
        for (const [name, panel] of Object.entries(panels)) panel.element.hidden = name !== button.dataset.tab;
        void panels[button.dataset.tab as keyof typeof panels].list();
        void this.refreshInfo(); // what runs and listens, in the info beside
      });
    }
    this.processes.element.hidden = true;
    this.ports.element.hidden = true;
    return el(
      "div",
      {},
      el("div", { class: "tabs", role: "tablist" }, buttons),
      this.files.element,
      this.processes.element,
      this.ports.element,
    );
  }
}
