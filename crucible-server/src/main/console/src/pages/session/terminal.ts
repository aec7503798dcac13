// A terminal: xterm.js over the session's terminal WebSocket (a login shell on a PTY of the panel's size), resized
// with the window (its shell is told, SIGWINCH: `stty size` follows).
import type { Session } from "@crucible/sdk";
import { AttachAddon } from "@xterm/addon-attach";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import { terminalSocket } from "../../api/terminal";
import { announce, el } from "../../ui/dom";

declare global {
  interface Window {
    /** The open terminal, for the browser tests to read what its screen shows. */
    crucibleTerminal?: Terminal;
  }
}

export class TerminalPanel {
  private readonly screen = el("div", { id: "terminal" });
  readonly element = el(
    "div",
    { class: "terminal" },
    el(
      "h2",
      {},
      "Terminal ",
      el("button", { id: "terminal-open", onclick: () => this.open() }, "Open a shell"),
      " ",
      el("button", { id: "terminal-close", onclick: () => this.close() }, "Close"),
    ),
    this.screen,
  );
  private open_?: { term: Terminal; socket: WebSocket; fit: FitAddon; pid?: number; resized: () => void };

  constructor(private readonly session: Session) {}

  open(): void {
    this.close();
    const term = new Terminal({ rows: 16, fontSize: 13, cursorBlink: true });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(this.screen);
    fit.fit();
    const socket = terminalSocket(this.session.id, term.rows, term.cols);
    term.loadAddon(new AttachAddon(socket));
    let resizing: ReturnType<typeof setTimeout> | undefined;
    const resized = () => {
      clearTimeout(resizing);
      resizing = setTimeout(() => fit.fit(), 100);
    };
    const open = { term, socket, fit, pid: undefined as number | undefined, resized };
    this.open_ = open;
    window.addEventListener("resize", resized);
    window.crucibleTerminal = term;
    socket.addEventListener("open", () => {
      announce("terminal", "open");
      term.focus();
      void this.findShell(open);
    });
    term.onResize(({ rows, cols }) => {
      if (this.open_ === open && open.pid) this.session.resize(open.pid, rows, cols).catch(() => {});
    });
    socket.addEventListener("close", (e) => {
      if (this.open_ === open) announce("terminal", "closed");
      term.write(`\r\n[the terminal closed: ${e.code}${e.reason ? ` ${e.reason}` : ""}]\r\n`);
    });
  }

  /**
   * The terminal's shell: the newest running process on a terminal with a socket attached (the server answers the
   * upgrade, not its pid, and starts the shell just after: asked again for a few seconds).
   */
  private async findShell(open: NonNullable<TerminalPanel["open_"]>): Promise<void> {
    for (let tries = 0; tries < 50 && this.open_ === open; tries++) {
      const processes = await this.session.processes().catch(() => []); // the session gone: no shell to find
      const shell = processes
        .filter((p) => p.running && p.pty && p.terminals > 0)
        .sort((a, b) => b.started_at.localeCompare(a.started_at))[0];
      if (shell) {
        open.pid = shell.pid;
        announce("terminalPid", shell.pid);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  close(): void {
    const open = this.open_;
    if (!open) return;
    this.open_ = undefined;
    window.removeEventListener("resize", open.resized);
    open.socket.close();
    open.term.dispose();
    window.crucibleTerminal = undefined;
    this.screen.replaceChildren();
    announce("terminal", undefined);
    announce("terminalPid", undefined);
  }
}
