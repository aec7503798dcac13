// Run: one program in a fresh sandbox, its output streamed as it comes, then its verdict with the time, CPU and
// memory it took.
import type { ExecuteRequest, ExecuteResult, RuntimeInfo } from "@crucible/sdk";
import { crucible, describe } from "../api/client";
import { announce, el } from "../ui/dom";
import { CodeEditor } from "../ui/editor";
import { bytes, duration } from "../ui/format";
import type { Page } from "./page";
import { RunHistory } from "./run/history";

export function runPage(): Page {
  let editor: CodeEditor;
  const language = el("select", { id: "language", "aria-label": "language" });
  const image = el("input", { id: "image", placeholder: "(the host's)", "aria-label": "image" });
  const timeout = el("input", {
    id: "timeout",
    type: "number",
    min: 0.1,
    max: 120,
    step: 0.1,
    value: 5,
    "aria-label": "timeout in seconds",
  });
  const memory = el("input", {
    id: "memory",
    type: "number",
    min: 16,
    max: 4096,
    value: 256,
    "aria-label": "memory in MiB",
  });
  const stdin = el("textarea", { id: "stdin", rows: 2, "aria-label": "stdin" });
  const verdict = el("div", { id: "verdict", class: "verdict" });
  const stdout = el("pre", { id: "stdout", class: "out" });
  const stderr = el("pre", { id: "stderr", class: "out err" });
  const history = new RunHistory((past) => {
    language.value = past.language;
    editor.setCode(past.code, past.language);
    stdout.textContent = past.result.stdout;
    stderr.textContent = past.result.stderr;
    show(past.result);
  });

  async function run(): Promise<void> {
    const started = performance.now();
    stdout.textContent = "";
    stderr.textContent = "";
    verdict.replaceChildren("running…");
    verdict.className = "verdict";
    const request: ExecuteRequest = {
      language: language.value,
      code: editor.code,
      stdin: stdin.value || undefined,
      image: image.value.trim() || undefined,
      limits: { timeout_ms: Math.round(Number(timeout.value) * 1000), memory_mb: Number(memory.value) },
    };
    try {
      for await (const event of crucible().executeStream(request)) {
        const e = event as { type: string; data?: string; result?: ExecuteResult };
        if (e.type === "stdout")
          stdout.append(e.data ?? ""); // text nodes, never markup
        else if (e.type === "stderr") stderr.append(e.data ?? "");
        else if (e.type === "result" && e.result) {
          show(e.result);
          history.add(request.language, request.code, e.result);
          verdict.dataset.tookMs = (performance.now() - started).toFixed(1); // from the key to the verdict
        }
      }
    } catch (e) {
      verdict.replaceChildren(describe(e));
      verdict.className = "verdict bad";
    }
  }

  function show(r: ExecuteResult): void {
    if (!stdout.textContent) stdout.textContent = r.stdout;
    if (!stderr.textContent) stderr.textContent = r.stderr;
    const ended = r.exit_code !== null ? `exit ${r.exit_code}` : r.signal !== null ? `signal ${r.signal}` : "";
    verdict.replaceChildren(
      el("b", {}, r.status),
      ...[
        ended,
        `${duration(r.wall_ms)} wall`,
        `${duration(r.cpu_ms)} CPU`,
        `${bytes(r.memory_bytes)} memory`,
        r.isolation ?? "",
        r.stdout_truncated || r.stderr_truncated ? "output cut at its cap" : "",
        r.message ?? "",
      ]
        .filter(Boolean)
        .map((part) => el("span", {}, part)),
    );
    verdict.className = `verdict ${r.status === "ok" ? "ok" : "bad"}`;
    verdict.dataset.status = r.status;
  }

  return {
    id: "run",
    title: "Run",
    async mount(section) {
      const runtimes: RuntimeInfo[] = await crucible().runtimes();
      language.replaceChildren(
        ...runtimes
          .filter((r) => r.available)
          .map((r) =>
            el(
              "option",
              { value: r.language, title: [r.image ?? "the host's", r.isolation ?? ""].filter(Boolean).join(" · ") },
              `${r.language} ${r.version ?? ""}`.trim(),
            ),
          ),
      );
      if (runtimes.some((r) => r.available && r.language === "python")) language.value = "python";
      const editorBox = el("div", { id: "editor", "aria-label": "code" });
      section.append(
        el(
          "div",
          { class: "bar" },
          el("label", {}, "Language ", language),
          el("label", {}, "Image ", image),
          el("label", {}, "Timeout (s) ", timeout),
          el("label", {}, "Memory (MiB) ", memory),
          el("button", { id: "run-button", class: "primary", title: "Ctrl-Enter", onclick: () => void run() }, "Run"),
        ),
        editorBox,
        el("label", { class: "stdin" }, "stdin ", stdin),
        verdict,
        el("h2", {}, "stdout"),
        stdout,
        el("h2", {}, "stderr"),
        stderr,
        el("h2", {}, "Runs in this tab"),
        history.element,
      );
      editor = new CodeEditor(editorBox, language.value || "python", () => void run());
      language.addEventListener("change", () => editor.setLanguage(language.value));
      editor.focus();
      announce("editorReady", "true");
    },
  };
}
