// Sessions: the token's sessions as a table (sorted, filtered), a form that makes one, and the open one below
// (`#sessions/<id>`): its info, a notebook, a terminal, its files, processes and ports.
import type { SessionInfo } from "@crucible/sdk";
import { crucible, describe } from "../api/client";
import { announce, el, statusLine } from "../ui/dom";
import { ago, mebibytes } from "../ui/format";
import { Table } from "../ui/table";
import type { Page } from "./page";
import { SnapshotsPanel } from "./session/snapshots";
import { SessionView } from "./session/view";

export function sessionsPage(): Page {
  let view: SessionView | undefined;
  const holder = el("div", { id: "session-view" });
  const status = statusLine("sessions-status");
  const language = el(
    "select",
    { id: "session-language", "aria-label": "session language" },
    el("option", {}, "python"),
    el("option", {}, "javascript"),
  );
  const isolation = el(
    "select",
    { id: "session-isolation", "aria-label": "session isolation" },
    el("option", { value: "namespaces" }, "namespaces"),
    el("option", { value: "gvisor" }, "gVisor"),
  );
  const memory = el("input", {
    id: "session-memory",
    type: "number",
    min: 16,
    max: 16384,
    placeholder: "default",
    "aria-label": "session memory in MiB",
  });
  const snapshots = new SnapshotsPanel((id) => {
    location.hash = `#sessions/${encodeURIComponent(id)}`;
  }, status.say);
  const table = new Table<SessionInfo>({
    id: "sessions-table",
    filter: "filter sessions",
    key: (s) => s.id,
    rowData: (s) => ({ "data-state": s.state }),
    sort: { key: "used", descending: true },
    empty: "No session yet: make one above.",
    open: (s) => {
      location.hash = `#sessions/${encodeURIComponent(s.id)}`;
    },
    columns: [
      { key: "id", label: "session", value: (s) => s.id, show: (s) => el("code", { title: s.id }, s.id.slice(-12)) },
      { key: "language", label: "language", value: (s) => s.language },
      { key: "tier", label: "tier", value: (s) => s.isolation ?? "namespaces" },
      { key: "state", label: "state", value: (s) => s.state, className: (s) => `state-${s.state}` },
      {
        key: "memory",
        label: "memory",
        numeric: true,
        value: (s) => s.limits.memory_mb,
        show: (s) => mebibytes(s.limits.memory_mb),
      },
      {
        key: "processes",
        label: "processes",
        numeric: true,
        value: (s) => s.processes.filter((p) => p.running).length,
      },
      { key: "used", label: "last used", value: (s) => s.last_used_at, show: (s) => ago(s.last_used_at) },
      { key: "expires", label: "expires", value: (s) => s.expires_at, show: (s) => ago(s.expires_at) },
    ],
  });

  async function list(): Promise<SessionInfo[]> {
    const sessions = await crucible().sessions();
    table.set(sessions);
    announce("sessions", sessions.length);
    return sessions;
  }

  async function create(): Promise<void> {
    try {
      const session = await crucible().createSession({
        language: language.value,
        isolation: isolation.value as "namespaces" | "gvisor",
        limits: memory.value ? { memory_mb: Number(memory.value) } : undefined,
      });
      location.hash = `#sessions/${encodeURIComponent(session.id)}`;
    } catch (e) {
      status.say(describe(e), true);
    }
  }

  async function open(id: string, sessions: SessionInfo[]): Promise<void> {
    if (view?.id === id) return;
    view?.close();
    view = undefined;
    holder.replaceChildren();
    announce("session", undefined);
    if (!id) return;
    // a session another replica holds is not in this one's list: asked by id, the request goes to its holder
    const info =
      sessions.find((s) => s.id === id) ??
      (await crucible()
        .session(id)
        .refresh()
        .catch(() => undefined));
    if (!info) {
      status.say(`session_not_found: no session ${id} of this token here`, true);
      return;
    }
    view = new SessionView(crucible().session(id), info, {
      changed: () => void list(),
      snapshotted: () => void snapshots.list(),
      gone: () => {
        location.hash = "#sessions";
      },
    });
    holder.replaceChildren(view.element);
    announce("session", id);
    await view.start();
  }

  return {
    id: "sessions",
    title: "Sessions",
    mount(section) {
      section.append(
        el(
          "div",
          { class: "bar" },
          el("label", {}, "Language ", language),
          el("label", {}, "Isolation ", isolation),
          el("label", {}, "Memory (MiB) ", memory),
          el("button", { id: "session-new", class: "primary", onclick: () => void create() }, "New session"),
          el("button", { id: "sessions-refresh", title: "refresh", onclick: () => void list() }, "↻"),
        ),
        status.element,
        table.element,
        el("details", { class: "snapshots" }, el("summary", {}, "Snapshots"), snapshots.element),
        holder,
      );
    },
    async show(rest) {
      try {
        void snapshots.list();
        await open(rest, await list());
      } catch (e) {
        status.say(describe(e), true);
      }
    },
  };
}
