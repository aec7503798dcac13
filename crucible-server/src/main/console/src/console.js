// The console's one script, served from the JAR under a strict Content-Security-Policy: no inline script, styles
// only from the console or with the page's nonce (CodeMirror's), everything a sandbox produced shown as text.
import { basicSetup, EditorView } from "codemirror";
import { keymap } from "@codemirror/view";
import { Compartment } from "@codemirror/state";
import { python } from "@codemirror/lang-python";
import { javascript } from "@codemirror/lang-javascript";
import { cpp } from "@codemirror/lang-cpp";
import { java } from "@codemirror/lang-java";
import { Terminal } from "@xterm/xterm";
import { AttachAddon } from "@xterm/addon-attach";
import { FitAddon } from "@xterm/addon-fit";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "crucible.token"; // sessionStorage: this tab only, gone when it closes; never in a URL
const nonce = document.querySelector('meta[name="crucible-nonce"]').content;
// xterm.js makes <style> elements of its own: each gets the page's nonce, so the policy needs no 'unsafe-inline'
const createElement = Document.prototype.createElement;
Document.prototype.createElement = function (name, options) {
  const element = createElement.call(this, name, options);
  if (String(name).toLowerCase() === "style") element.setAttribute("nonce", nonce);
  return element;
};
const SAMPLES = {
  python: 'print("hello from the sandbox")\n',
  javascript: 'console.log("hello from the sandbox");\n',
  bash: 'echo "hello from the sandbox"\n',
  c: '#include <stdio.h>\nint main(void) { puts("hello from the sandbox"); return 0; }\n',
  cpp: '#include <iostream>\nint main() { std::cout << "hello from the sandbox" << std::endl; }\n',
  java: 'public class Main {\n    public static void main(String[] args) {\n        System.out.println("hello from the sandbox");\n    }\n}\n',
};
const MODES = { python: python(), javascript: javascript(), c: cpp(), cpp: cpp(), java: java() };

/** A call of the API with the tab's token; a refusal as an Error carrying the API's code. */
async function api(method, path, body, accept = "application/json") {
  const headers = { Accept: accept };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  else if (method !== "GET") headers["X-Crucible-Request"] = "1"; // a POST without JSON, from this page
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) {
    let error = { code: `http_${response.status}`, message: response.statusText };
    try { error = (await response.json()).error ?? error; } catch { /* not the API's JSON */ }
    const e = new Error(error.message);
    e.code = error.code;
    e.status = response.status;
    throw e;
  }
  return response;
}

// -- sign-in --

async function signedIn() {
  try {
    await api("GET", "/v1/runtimes");
    $("signed").textContent = sessionStorage.getItem(TOKEN_KEY) ? "signed in (this tab)" : "no token needed";
    return true;
  } catch (e) {
    if (e.status === 401) return false;
    throw e;
  }
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  if (await signedIn()) {
    $("signin-error").textContent = "";
    show(location.hash.slice(1) || "run");
  } else {
    sessionStorage.removeItem(TOKEN_KEY);
    $("signin-error").textContent = "The server refused that token.";
  }
});

// -- pages --

const pages = { run: initRun, sessions: initSessions, eval: initEval, server: initServer };
const started = new Set();

async function show(page) {
  if (!pages[page]) page = "run";
  for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== page;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("active", link.dataset.page === page);
  if (!started.has(page)) {
    started.add(page);
    await pages[page]();
  }
}

window.addEventListener("hashchange", () => show(location.hash.slice(1)));

// -- run --

let editor;
const language = new Compartment();

async function initRun() {
  const runtimes = await (await api("GET", "/v1/runtimes")).json();
  for (const r of runtimes.filter((r) => r.available)) {
    const option = document.createElement("option");
    option.value = r.language;
    option.textContent = `${r.language} ${r.version ?? ""}`.trim();
    $("language").append(option);
  }
  editor = new EditorView({
    doc: SAMPLES.python,
    parent: $("editor"),
    extensions: [
      keymap.of([{ key: "Mod-Enter", run: () => { run(); return true; } }]),
      basicSetup,
      language.of(MODES.python),
      EditorView.cspNonce.of(nonce),
    ],
  });
  $("language").addEventListener("change", () => {
    const lang = $("language").value;
    editor.dispatch({
      changes: { from: 0, to: editor.state.doc.length, insert: SAMPLES[lang] ?? "" },
      effects: language.reconfigure(MODES[lang] ?? []),
    });
  });
  $("run-button").addEventListener("click", run);
  editor.focus();
  document.body.dataset.editorReady = "true";
}

async function run() {
  const started = performance.now();
  const out = $("stdout"), err = $("stderr"), verdict = $("verdict");
  out.textContent = "";
  err.textContent = "";
  verdict.textContent = "running…";
  verdict.className = "verdict";
  const request = {
    language: $("language").value,
    code: editor.state.doc.toString(),
    stdin: $("stdin").value || undefined,
    image: $("image").value.trim() || undefined,
    limits: { timeout_ms: Number($("timeout").value), memory_mb: Number($("memory").value) },
  };
  try {
    const response = await api("POST", "/v1/execute", request, "application/x-ndjson");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let pending = "";
    for (;;) {
      const { done, value } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line) event(JSON.parse(line));
      }
      if (done) break;
    }
  } catch (e) {
    verdict.textContent = `${e.code ?? "error"}: ${e.message}`;
    verdict.className = "verdict bad";
  }

  function event(e) {
    if (e.type === "stdout") out.append(document.createTextNode(e.data)); // text, never markup
    else if (e.type === "stderr") err.append(document.createTextNode(e.data));
    else if (e.type === "result") {
      const r = e.result;
      if (!out.textContent) out.textContent = r.stdout;
      if (!err.textContent) err.textContent = r.stderr;
      verdict.textContent = `${r.status} · exit ${r.exit_code ?? "–"} · ${r.wall_ms} ms · `
        + `${(r.memory_bytes / 1048576).toFixed(1)} MiB`;
      verdict.className = `verdict ${r.status === "ok" ? "ok" : "bad"}`;
      verdict.dataset.tookMs = (performance.now() - started).toFixed(1); // from the key to the verdict on the page
      verdict.dataset.status = r.status;
    }
  }
}

// -- sessions: a notebook over one session, its files, and what changes it (pause, resume, fork, snapshot) --

let current; // the session id shown

async function initSessions() {
  $("session-new").addEventListener("click", async () => {
    const info = await (await api("POST", "/v1/sessions", { language: $("session-language").value,
      isolation: $("session-isolation").value })).json();
    await listSessions(info.id);
  });
  $("session-pick").addEventListener("change", () => open($("session-pick").value));
  const act = (id, action, body) => $(id).addEventListener("click", async () => {
    if (!current) return;
    try {
      const r = await (await api("POST", `/v1/sessions/${current}/${action}`, body?.())).json();
      status(`${action}: ${JSON.stringify(r, (k, v) => (k === "forks" ? v.map((f) => f.id) : v))}`);
      await listSessions(current);
    } catch (e) {
      status(`${e.code}: ${e.message}`);
    }
  });
  act("session-pause", "pause");
  act("session-resume", "resume");
  act("session-fork", "fork", () => ({ count: 1 }));
  act("session-snapshot", "snapshots", () => ({ name: prompt("Snapshot name") ?? "" }));
  $("session-delete").addEventListener("click", async () => {
    if (!current) return;
    await api("DELETE", `/v1/sessions/${current}`);
    current = undefined;
    await listSessions();
  });
  $("cell-run").addEventListener("click", runCell);
  $("cell").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      runCell();
    }
  });
  $("files-go").addEventListener("submit", (e) => { e.preventDefault(); listFiles(); });
  $("files-up").addEventListener("click", () => {
    const dir = $("files-dir").value.trim().replace(/\/+$/, "");
    $("files-dir").value = dir.includes("/") ? dir.slice(0, dir.lastIndexOf("/")) || "/" : "";
    listFiles();
  });
  for (const tab of document.querySelectorAll(".tabs button")) {
    tab.addEventListener("click", () => {
      for (const other of document.querySelectorAll(".tabs button")) other.classList.toggle("active", other === tab);
      for (const panel of document.querySelectorAll(".side .tab")) panel.hidden = panel.id !== `tab-${tab.dataset.tab}`;
      ({ files: listFiles, processes: listProcesses, ports: listPorts })[tab.dataset.tab]();
    });
  }
  $("process-start").addEventListener("submit", async (e) => {
    e.preventDefault();
    const command = $("process-command").value.trim();
    if (!current || !command) return;
    try {
      const p = await (await api("POST", `/v1/sessions/${current}/commands`, { command, background: true })).json();
      status(`started ${p.pid}`);
      $("process-command").value = "";
    } catch (err) {
      status(`${err.code}: ${err.message}`);
    }
    await listProcesses();
  });
  $("ports-refresh").addEventListener("click", listPorts);
  $("terminal-open").addEventListener("click", openTerminal);
  $("terminal-close").addEventListener("click", closeTerminal);
  $("upload").addEventListener("change", async () => {
    const file = $("upload").files[0];
    if (!file || !current) return;
    const headers = { "Content-Type": "application/octet-stream" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const r = await fetch(`/v1/sessions/${current}/files/${encodeURIComponent(file.name)}`, {
      method: "PUT", headers, body: file,
    });
    status(r.ok ? `uploaded ${file.name}` : `upload refused: HTTP ${r.status}`);
    $("upload").value = "";
    await listFiles();
  });
  await listSessions();
}

function status(text) {
  $("session-status").textContent = text;
}

async function listSessions(select) {
  const { sessions } = await (await api("GET", "/v1/sessions")).json();
  $("session-pick").replaceChildren(...sessions.map((s) => {
    const option = document.createElement("option");
    option.value = s.id;
    option.textContent = `${s.id.slice(-8)} · ${s.language} · ${s.isolation ?? "namespaces"} · ${s.state}`;
    return option;
  }));
  const id = select ?? current ?? sessions[0]?.id;
  if (id) {
    $("session-pick").value = id;
    if (id !== current) await open(id);
  } else {
    $("cells").replaceChildren();
    $("files").replaceChildren();
  }
  document.body.dataset.sessions = String(sessions.length);
}

async function open(id) {
  closeTerminal();
  current = id;
  $("cells").replaceChildren();
  $("files-dir").value = "";
  $("processes").replaceChildren();
  $("ports").replaceChildren();
  $("process-output").textContent = "";
  await listFiles();
}

async function runCell() {
  const code = $("cell").value;
  if (!current || !code.trim()) return;
  const cell = document.createElement("div");
  cell.className = "cell";
  const source = document.createElement("pre");
  source.className = "code";
  source.textContent = code;
  cell.append(source);
  $("cells").append(cell);
  $("cell").value = "";
  try {
    const r = await (await api("POST", `/v1/sessions/${current}/execute`, { code })).json();
    render(cell, r);
  } catch (e) {
    cell.append(text(`${e.code}: ${e.message}`, "err"));
  }
  cell.dataset.done = "true";
  await listFiles();
}

/** A cell's answer into the page: text as text, images as images, HTML in a frame that can run nothing. */
function render(cell, r) {
  if (r.stdout) cell.append(text(r.stdout));
  if (r.stderr) cell.append(text(r.stderr, "err"));
  for (const d of r.display ?? []) {
    if (d.mime === "image/png" || d.mime === "image/jpeg") {
      const img = document.createElement("img");
      img.src = `data:${d.mime};base64,${d.data}`;
      img.alt = "a figure";
      cell.append(img);
    } else if (d.mime === "text/html" || d.mime === "image/svg+xml") {
      const frame = document.createElement("iframe");
      frame.setAttribute("sandbox", ""); // an opaque origin, no script, no form, no navigation of the console
      frame.srcdoc = d.mime === "text/html" ? d.data
        : `<img src="data:image/svg+xml;base64,${btoa(String.fromCharCode(...new TextEncoder().encode(d.data)))}">`;
      frame.title = d.mime;
      cell.append(frame);
    } else {
      cell.append(text(d.data));
    }
  }
  if (r.result !== undefined && r.result !== null) cell.append(text(`Out: ${r.result}`));
  if (r.error) cell.append(text(r.error.traceback || `${r.error.name}: ${r.error.message}`, "err"));
}

function text(value, kind = "") {
  const pre = document.createElement("pre");
  pre.className = `out ${kind}`;
  pre.textContent = value;
  return pre;
}

/** One directory of the session: /workspace's (relative paths), or any other when the path typed is absolute. */
async function listFiles() {
  if (!current) return;
  const dir = $("files-dir").value.trim();
  let files = [];
  try {
    const query = dir ? `?dir=${encodeURIComponent(dir)}` : "";
    files = (await (await api("GET", `/v1/sessions/${current}/files${query}`)).json()).files;
  } catch (e) {
    status(`${e.code}: ${e.message}`);
  }
  $("files").replaceChildren(...files.map((f) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = f.type === "directory" ? "name dir" : "name";
    name.textContent = f.type === "directory" ? `${f.path}/` : f.type === "symlink" ? `${f.path} →` : f.path;
    li.append(name);
    if (f.type === "directory") {
      name.addEventListener("click", () => {
        $("files-dir").value = f.path.startsWith("/") ? f.path : `${dir && !dir.endsWith("/") ? `${dir}/` : dir}${f.path}`;
        listFiles();
      });
    }
    if (f.type === "file") {
      const download = document.createElement("button");
      download.textContent = "↓";
      download.title = `download ${f.path}`;
      download.addEventListener("click", () => saveFile(f.path.startsWith("/") || !dir ? f.path
        : `${dir.replace(/\/+$/, "")}/${f.path}`));
      li.append(download);
    }
    return li;
  }));
  document.body.dataset.filesDir = dir;
}

async function saveFile(path) {
  const blob = await (await api("GET", `/v1/sessions/${current}/files?path=${encodeURIComponent(path)}`, undefined,
    "*/*")).blob();
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = path.split("/").pop();
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

/** The session's background processes (a terminal's shell among them): their output on a click, a stop button. */
async function listProcesses() {
  if (!current) return;
  let processes = [];
  try {
    processes = (await (await api("GET", `/v1/sessions/${current}/processes`)).json()).processes;
  } catch (e) {
    status(`${e.code}: ${e.message}`);
  }
  $("processes").replaceChildren(...processes.map((p) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "name dir";
    name.textContent = `${p.pid} ${p.argv.join(" ")} · ${p.running ? "running"
      : p.exit_code !== null ? `exit ${p.exit_code}` : `signal ${p.signal}`}`;
    name.addEventListener("click", async () => {
      const out = await (await api("GET", `/v1/sessions/${current}/processes/${p.pid}/output`)).json();
      $("process-output").textContent = out.stdout + out.stderr; // text, never markup
      $("process-output").dataset.pid = String(p.pid);
    });
    li.append(name);
    if (p.running) {
      const stop = document.createElement("button");
      stop.textContent = "■";
      stop.title = `stop ${p.pid} (SIGTERM to its group)`;
      stop.addEventListener("click", async () => {
        await api("POST", `/v1/sessions/${current}/processes/${p.pid}/signal`, { signal: "TERM" });
        await listProcesses();
      });
      li.append(stop);
    }
    return li;
  }));
  document.body.dataset.processes = String(processes.length);
}

/** What listens in the session, each with a preview: a signed link the server fences off from this page. */
async function listPorts() {
  if (!current) return;
  let ports = [];
  try {
    ports = (await (await api("GET", `/v1/sessions/${current}/ports`)).json()).ports;
  } catch (e) {
    status(`${e.code}: ${e.message}`);
  }
  $("ports").replaceChildren(...ports.map((p) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = String(p.port);
    const preview = document.createElement("button");
    preview.textContent = "preview";
    preview.addEventListener("click", async () => {
      const link = await (await api("POST", `/v1/sessions/${current}/previews`, { port: p.port })).json();
      const a = document.createElement("a");
      a.href = new URL(link.url, location.href).href; // the server's answer, as a link: never markup
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      a.textContent = "open ↗";
      a.className = "preview";
      preview.replaceWith(a);
    });
    li.append(name, preview);
    return li;
  }));
  document.body.dataset.ports = String(ports.length);
}

// -- a terminal: xterm.js over the session's terminal WebSocket --

let terminal; // { term, socket, fit, pid: its shell's, once known }

function openTerminal() {
  if (!current) return;
  closeTerminal();
  const term = new Terminal({ rows: 16, fontSize: 13, cursorBlink: true });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open($("terminal"));
  fit.fit();
  // a browser's WebSocket sends no header of ours: the token goes as a subprotocol, after the one the server answers
  const protocols = ["crucible.terminal"];
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) protocols.push(`crucible.bearer.${base64url(token)}`);
  const session = current;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/v1/sessions/${session}/terminal`
    + `?rows=${term.rows}&cols=${term.cols}`, protocols);
  socket.binaryType = "arraybuffer";
  term.loadAddon(new AttachAddon(socket));
  socket.addEventListener("open", async () => {
    document.body.dataset.terminal = "open";
    term.focus();
    // its shell: the newest process on a terminal with a socket attached (the server answers the upgrade, not its
    // pid, and starts the shell just after it: asked again for a few seconds)
    for (let tries = 0; tries < 50 && terminal?.socket === socket; tries++) {
      const { processes } = await (await api("GET", `/v1/sessions/${session}/processes`)).json();
      const shell = processes.filter((p) => p.running && p.pty && p.terminals > 0)
        .sort((a, b) => b.started_at.localeCompare(a.started_at))[0];
      if (shell) {
        terminal.pid = shell.pid;
        document.body.dataset.terminalPid = String(shell.pid);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  term.onResize(({ rows, cols }) => {
    if (terminal?.term === term && terminal.pid) {
      api("POST", `/v1/sessions/${session}/processes/${terminal.pid}/resize`, { rows, cols }).catch(() => {});
    }
  });
  socket.addEventListener("close", (e) => {
    if (terminal?.socket === socket) document.body.dataset.terminal = "closed";
    term.write(`\r\n[the terminal closed: ${e.code}${e.reason ? ` ${e.reason}` : ""}]\r\n`);
  });
  terminal = { term, socket, fit, pid: undefined };
  window.crucibleTerminal = term; // for the browser tests: what the screen shows
}

// the window resized: the terminal takes the panel's new size, and its shell is told (SIGWINCH)
let resizing;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => terminal?.fit.fit(), 100);
});

function closeTerminal() {
  if (!terminal) return;
  terminal.socket.close();
  terminal.term.dispose();
  terminal = undefined;
  window.crucibleTerminal = undefined;
  $("terminal").replaceChildren();
  delete document.body.dataset.terminal;
  delete document.body.dataset.terminalPid;
}

function base64url(text) {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text))).replace(/\+/g, "-").replace(/\//g, "_")
    .replace(/=+$/, "");
}

// -- an evaluation's results: read in the tab from files the user picks --

const evaluation = { rows: [], summary: null, samples: new Map(), problems: new Map(), files: {} };

function initEval() {
  const read = (input, handle) => $(input).addEventListener("change", async () => {
    const file = $(input).files[0];
    if (!file) return;
    const text = await file.text();
    evaluation.files[input] = text;
    handle(jsonl(text));
    showEval();
  });
  read("eval-results", results);
  read("eval-samples", (lines) => { // the n-th sample of a task, in file order, is its `sample` number
    evaluation.samples = new Map();
    const seen = new Map();
    for (const l of lines) {
      const n = seen.get(l.task_id) ?? 0;
      seen.set(l.task_id, n + 1);
      evaluation.samples.set(`${l.task_id}#${n}`, l.completion ?? l.code ?? l.solution ?? "");
    }
  });
  read("eval-problems", (lines) => {
    evaluation.problems = new Map(lines.map((l) => [l.task_id, l]));
  });
  $("eval-filter").addEventListener("change", showEval);
  $("eval-start").addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!evaluation.files["eval-problems"]) {
      $("eval-status").textContent = "Pick a problems file (and a samples file, unless the dataset has solutions).";
      return;
    }
    try {
      const run = await (await api("POST", "/v1/evaluations", { format: $("eval-format").value,
        problems: evaluation.files["eval-problems"], samples: evaluation.files["eval-samples"],
        k: $("eval-k").value.split(",").map((k) => Number(k.trim())).filter((k) => k > 0),
        timeout_ms: Number($("eval-timeout").value) })).json();
      $("eval-status").textContent = `started ${run.id}: ${run.total} samples`;
    } catch (err) {
      $("eval-status").textContent = `${err.code}: ${err.message}`;
    }
    await listRuns();
  });
  listRuns();
}

function jsonl(text) {
  return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
}

/** A results file's lines into the table: its summary line, and a row per judged sample. */
function results(lines) {
  evaluation.summary = lines.find((l) => l.summary)?.summary ?? null;
  evaluation.rows = lines.filter((l) => l.task_id !== undefined)
    .sort((a, b) => a.task_id.localeCompare(b.task_id, undefined, { numeric: true }) || a.sample - b.sample);
}

let following; // the timer that follows runs still going

/** The token's runs on this server, followed every second while one goes on. */
async function listRuns() {
  clearTimeout(following);
  const { evaluations } = await (await api("GET", "/v1/evaluations")).json();
  const header = document.createElement("tr");
  for (const h of ["run", "format", "state", "judged", "passed", "pass@k", "started", ""]) {
    const th = document.createElement("th");
    th.textContent = h;
    header.append(th);
  }
  $("eval-runs").replaceChildren(...(evaluations.length ? [header] : []), ...evaluations.map((r) => {
    const tr = document.createElement("tr");
    const passAtK = Object.entries(r.summary?.pass_at_k ?? {}).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(", ");
    for (const value of [r.id.slice(0, 8), r.format, r.state + (r.error ? ` (${r.error})` : ""),
      `${r.done} / ${r.total}`, String(r.passed), passAtK, new Date(r.created_at).toLocaleString()]) {
      const td = document.createElement("td");
      td.textContent = value;
      tr.append(td);
    }
    const actions = document.createElement("td");
    const open = document.createElement("button");
    open.textContent = "open";
    open.addEventListener("click", async () => {
      results(jsonl(await (await api("GET", `/v1/evaluations/${r.id}/results`, undefined, "application/x-ndjson"))
        .text()));
      showEval();
      document.body.dataset.evalOpened = r.id;
    });
    const remove = document.createElement("button");
    remove.textContent = r.state === "running" ? "stop" : "delete";
    remove.addEventListener("click", async () => {
      await api("DELETE", `/v1/evaluations/${r.id}`);
      await listRuns();
    });
    actions.append(open, remove);
    tr.append(actions);
    tr.dataset.state = r.state;
    return tr;
  }));
  document.body.dataset.evalRuns = evaluations.map((r) => r.state).join(",");
  if (evaluations.some((r) => r.state === "running")) {
    following = setTimeout(function tick() { // while the page is hidden, it waits to be shown again
      if ($("eval").hidden) following = setTimeout(tick, 1000);
      else listRuns().catch(() => {});
    }, 1000);
  }
}

const FILTERS = {
  all: () => true,
  passed: (r) => r.passed,
  failed: (r) => !r.passed,
  timeout: (r) => r.status === "timeout",
  unproven: (r) => /did not run/.test(r.result ?? ""),
  error: (r) => r.status === "runtime_error",
};

function showEval() {
  const s = evaluation.summary;
  table($("eval-summary"), s ? [["problems", String(s.problems)], ["samples", String(s.samples)],
    ["passed", String(s.passed)], ...Object.entries(s.pass_at_k ?? {}).map(([k, v]) => [k, v.toFixed(4)])] : []);
  const rows = evaluation.rows.filter(FILTERS[$("eval-filter").value]);
  const header = document.createElement("tr");
  for (const h of ["task", "sample", "verdict", "status", "why", "ms"]) {
    const th = document.createElement("th");
    th.textContent = h;
    header.append(th);
  }
  $("eval-table").replaceChildren(header, ...rows.map((r) => {
    const tr = document.createElement("tr");
    for (const [value, kind] of [[r.task_id], [String(r.sample)], [r.passed ? "passed" : "failed",
      r.passed ? "pass" : "fail"], [r.status], [r.result ?? ""], [String(r.wall_ms ?? "")]]) {
      const td = document.createElement("td");
      td.textContent = value;
      if (kind) td.className = kind;
      tr.append(td);
    }
    tr.addEventListener("click", () => {
      for (const other of $("eval-table").querySelectorAll("tr.selected")) other.classList.remove("selected");
      tr.classList.add("selected");
      showSample(r);
    });
    return tr;
  }));
  document.body.dataset.evalRows = String(rows.length);
}

/** One sample beside its problem: its code, its verdict and reason, and the tests or expected output. */
function showSample(r) {
  const problem = evaluation.problems.get(r.task_id) ?? {};
  const parts = [["verdict", `${r.passed ? "passed" : "failed"} · ${r.status} · ${r.result ?? ""}`],
    ["the sample's code", (problem.prompt ?? "") + (evaluation.samples.get(`${r.task_id}#${r.sample}`)
      ?? "(pick the samples file to see it)")],
    ["the tests", problem.test ?? (problem.test_list ?? []).join("\n") ?? ""]];
  $("eval-sample").replaceChildren(...parts.flatMap(([title, value]) => {
    const h = document.createElement("h2");
    h.textContent = title;
    return [h, text(value)];
  }));
}

// -- the server --

const HISTORY = 150; // two-second samples: the last five minutes
const samples = [];

async function initServer() {
  let last;
  const refresh = async () => {
    const health = await (await api("GET", "/healthz")).json().catch(() => ({}));
    const rows = ["status", "running", "queued", "max_running", "max_queued", "pool_ready", "rss_bytes", "uptime_ms"];
    table($("health"), rows.map((k) => [k, String(health[k] ?? "")]));
    table($("parts"), (health.parts ?? []).map((p) => [p.part, p.state, p.detail ?? ""]));
    const text = await (await api("GET", "/metrics", undefined, "text/plain")).text();
    table($("counters"), counters(text));
    const now = metrics(text);
    now.at = Date.now();
    if (last) {
      const seconds = (now.at - last.at) / 1000;
      const count = now.durationCount - last.durationCount;
      samples.push({ rate: (now.requests - last.requests) / seconds,
        latency: count > 0 ? (now.durationSum - last.durationSum) / count * 1000 : 0,
        running: health.running ?? 0, queued: health.queued ?? 0 });
      if (samples.length > HISTORY) samples.shift();
      chart($("chart-rate"), [samples.map((s) => s.rate)]);
      chart($("chart-latency"), [samples.map((s) => s.latency)]);
      chart($("chart-load"), [samples.map((s) => s.running), samples.map((s) => s.queued)]);
      document.body.dataset.samples = String(samples.length);
    }
    last = now;
  };
  await refresh();
  setInterval(() => { if (!$("server").hidden) refresh().catch(() => {}); }, 2000);
}

/** The sums the charts need from the Prometheus text: requests served, and the request-duration histogram's. */
function metrics(text) {
  const out = { requests: 0, durationSum: 0, durationCount: 0 };
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (m[1] === "crucible_http_requests_total") out.requests += value;
    else if (m[1] === "crucible_http_request_duration_seconds_sum") out.durationSum += value;
    else if (m[1] === "crucible_http_request_duration_seconds_count") out.durationCount += value;
  }
  return out;
}

/**
 * The engine's own counters and gauges from the Prometheus text, as rows: sessions by state, the pool, egress
 * decisions, verdicts, OOM kills, timeouts, each part's state and replacements (the HTTP histograms are charted).
 */
function counters(text) {
  const rows = [];
  for (const line of text.split("\n")) {
    const m = /^(crucible_[a-z_]+)(\{[^}]*\})? ([0-9.eE+-]+)$/.exec(line);
    if (m && !m[1].startsWith("crucible_http_")) {
      rows.push([m[1].replace(/^crucible_/, "").replace(/_total$/, ""), (m[2] ?? "").replace(/[{}"]/g, ""),
        Number(m[3]).toLocaleString()]);
    }
  }
  return rows;
}

/**
 * Lines of `series` (the first blue, the second red) drawn into `svg`, the newest sample at the right edge, scaled to
 * their maximum, which is labelled.
 */
function chart(svg, series) {
  const ns = "http://www.w3.org/2000/svg";
  const max = Math.max(1e-9, ...series.flat());
  const lines = series.map((values, i) => {
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("class", i === 0 ? "a" : "b");
    line.setAttribute("points", values.map((v, x) => `${((HISTORY - values.length + x) / (HISTORY - 1)) * 300},${78 - (v / max) * 70}`)
      .join(" "));
    return line;
  });
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "2");
  label.setAttribute("y", "9");
  label.textContent = `max ${max >= 10 ? max.toFixed(0) : max.toFixed(2)}`;
  svg.replaceChildren(...lines, label);
}

function table(element, rows) {
  element.replaceChildren(...rows.map((cells) => {
    const tr = document.createElement("tr");
    for (const cell of cells) {
      const td = document.createElement("td");
      td.textContent = cell;
      tr.append(td);
    }
    return tr;
  }));
}

// -- start --

(async () => {
  if (await signedIn()) {
    show(location.hash.slice(1) || "run");
  } else {
    for (const section of document.querySelectorAll("main > section")) section.hidden = section.id !== "signin";
  }
})();
