// A session at a glance: its tier, state, limits in human units, idle rules, times, processes and ports.
import type { SessionInfo } from "@crucible/sdk";
import { type Child, el } from "../../ui/dom";
import { ago, bytes, count, duration, mebibytes, seconds, when } from "../../ui/format";

export class SessionInfoPanel {
  readonly element = el("dl", { id: "session-info", class: "facts" });

  update(info: SessionInfo): void {
    const running = info.processes.filter((p) => p.running);
    const limits = info.limits;
    const facts: [string, Child | Child[]][] = [
      ["tier", el("b", { class: "tier" }, info.isolation ?? "namespaces")],
      ["state", el("span", { class: `state-${info.state}` }, info.state)],
      ["language", info.image ? [info.language, " in ", el("code", {}, info.image)] : info.language],
      ["memory", mebibytes(limits.memory_mb)],
      ["CPUs", limits.cpus === undefined ? "–" : count(limits.cpus)],
      ["processes (max)", limits.pids === undefined ? "–" : count(limits.pids)],
      ["cell timeout", duration(limits.timeout_ms)],
      ["output cap", bytes(limits.output_bytes)],
      ["when idle", `${info.on_idle} after ${seconds(info.idle_timeout_s)}`],
      ["restore", info.restore],
      ["network", network(info.network)],
      ["created", el("span", { title: when(info.created_at) }, ago(info.created_at))],
      ["last used", el("span", { title: when(info.last_used_at) }, ago(info.last_used_at))],
      ["expires", el("span", { title: when(info.expires_at) }, ago(info.expires_at))],
      [
        "running",
        running.length
          ? running.map((p) => el("code", { class: "proc" }, `${p.pid} ${p.argv.join(" ")}`))
          : "no background process",
      ],
      [
        "listening",
        info.ports?.length ? info.ports.map((p) => el("code", { class: "proc" }, String(p.port))) : "no port",
      ],
    ];
    this.element.replaceChildren(
      ...facts.flatMap(([name, value]) => [el("dt", {}, name), el("dd", { "data-fact": name }, value)]),
    );
  }
}

function network(value: unknown): string {
  const allow = (value as { allow?: string[] } | null | undefined)?.allow;
  if (!allow) return "no egress";
  return allow.length ? allow.join(", ") : "locked: no egress";
}
