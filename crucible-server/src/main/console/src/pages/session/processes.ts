// A session's background processes (a terminal's shell among them): what runs, since when, how much it printed; its
// output on a click, a stop button (SIGTERM to its group), and a line to start a command in the background.
import type { ProcessInfo, Session } from "@crucible/sdk";
import { describe } from "../../api/client";
import { announce, el } from "../../ui/dom";
import { ago, bytes, when } from "../../ui/format";
import { Table } from "../../ui/table";

export class ProcessesPanel {
  private readonly command = el("input", {
    id: "process-command",
    placeholder: "a command, run in the background",
    "aria-label": "command",
  });
  private readonly output = el("pre", { id: "process-output", class: "out" });
  private readonly table = new Table<ProcessInfo>({
    id: "processes",
    filter: "filter processes",
    key: (p) => String(p.pid),
    rowData: (p) => ({ "data-running": String(p.running) }),
    sort: { key: "started", descending: false },
    empty: "No background process.",
    columns: [
      { key: "pid", label: "pid", numeric: true, value: (p) => p.pid },
      {
        key: "command",
        label: "command",
        value: (p) => p.argv.join(" "),
        show: (p) =>
          el(
            "button",
            { type: "button", class: "name dir", title: "its output", onclick: () => void this.show(p) },
            p.argv.join(" "),
          ),
      },
      { key: "state", label: "state", value: (p) => state(p), className: (p) => (p.running ? "pass" : undefined) },
      {
        key: "started",
        label: "started",
        value: (p) => p.started_at,
        show: (p) => el("span", { title: when(p.started_at) }, ago(p.started_at)),
      },
      {
        key: "output",
        label: "output",
        numeric: true,
        value: (p) => p.output_bytes,
        show: (p) => bytes(p.output_bytes),
      },
      {
        key: "stop",
        label: "",
        value: () => "",
        show: (p) =>
          p.running
            ? el(
                "button",
                { class: "icon", title: `stop ${p.pid} (SIGTERM to its group)`, onclick: () => void this.stop(p) },
                "■",
              )
            : "",
      },
    ],
  });
  readonly element = el(
    "div",
    { id: "tab-processes", class: "tab" },
    el(
      "form",
      {
        id: "process-start",
        class: "path",
        onsubmit: (e: Event) => {
          e.preventDefault();
          void this.start();
        },
      },
      this.command,
      el("button", { type: "submit" }, "Start"),
    ),
    this.table.element,
    this.output,
  );

  constructor(
    private readonly session: Session,
    private readonly say: (text: string, bad?: boolean) => void,
    private readonly changed: () => void,
  ) {}

  async list(): Promise<void> {
    try {
      const processes = await this.session.processes();
      this.table.set(processes);
      announce("processes", processes.length);
    } catch (e) {
      this.say(describe(e), true);
    }
  }

  private async start(): Promise<void> {
    const command = this.command.value.trim();
    if (!command) return;
    try {
      const p = await this.session.startProcess(command);
      this.say(`started ${p.pid}: ${command}`);
      this.command.value = "";
    } catch (e) {
      this.say(describe(e), true);
    }
    this.changed();
    await this.list();
  }

  private async show(p: ProcessInfo): Promise<void> {
    try {
      const out = await this.session.processOutput(p.pid);
      this.output.textContent = out.stdout + out.stderr; // text, never markup
      this.output.dataset.pid = String(p.pid);
    } catch (e) {
      this.say(describe(e), true);
    }
  }

  private async stop(p: ProcessInfo): Promise<void> {
    try {
      await this.session.signal(p.pid, "TERM");
    } catch (e) {
      this.say(describe(e), true);
    }
    this.changed();
    await this.list();
  }
}

function state(p: ProcessInfo): string {
  if (p.running) return "running";
  if (p.lost) return "lost";
  if (p.timed_out) return "timed out";
  return p.exit_code !== null ? `exit ${p.exit_code}` : `signal ${p.signal}`;
}
