// The console in a real Chromium (Debian's, driven by playwright-core; nothing downloaded) against a real server:
// sign-in, a run with Ctrl-Enter, hostile output that must stay text, the server page (charts with axes, tables that
// sort and filter), a session (its info, notebook, terminal, files, processes, ports), evaluations. Prints what it measured (time
// to an interactive editor, Ctrl-Enter to the output of print(1), the same request by curl) and saves screenshots.
// Env: CRUCIBLE_URL, CRUCIBLE_TOKEN, SCREENSHOTS (a directory). Exits non-zero on the first failed check.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chromium } from "playwright-core";

const url = process.env.CRUCIBLE_URL;
const token = process.env.CRUCIBLE_TOKEN;
const shots = process.env.SCREENSHOTS;
assert.ok(url && token && shots, "CRUCIBLE_URL, CRUCIBLE_TOKEN and SCREENSHOTS are set by ConsoleBrowserTest");

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
  const dialogs = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    d.dismiss();
  });
  const violations = [];
  const pageErrors = []; // an exception the console's code did not catch (a rejected promise included)
  page.on("pageerror", (e) => pageErrors.push(e.stack ?? e.message));
  let refusalExpected = false; // while the page tries a script from a preview, which the policy must refuse
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text()) && !(refusalExpected && m.text().includes("/v1/previews/"))) {
      violations.push(m.text());
    }
  });

  const root = await page.goto(`${url}/`);
  assert.equal(new URL(root.url()).pathname, "/ui/", "a browser at / is sent to the console");
  await page.waitForSelector("#signin:not([hidden])");
  await page.fill("#token", "not-the-token");
  await page.click("#signin-form button");
  await page.waitForFunction(() => document.getElementById("signin-error").textContent.includes("refused"));
  await page.fill("#token", token);
  await page.click("#signin-form button");
  await page.waitForSelector("body[data-editor-ready=true]");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("crucible.token")), token);
  assert.equal(await page.evaluate(() => localStorage.length), 0, "the token is never in localStorage");
  assert.ok(!page.url().includes(token), "the token is never in the URL");

  // a fresh tab: the time to an interactive editor
  const tab = await browser.newPage();
  await tab.goto(`${url}/ui/`); // a new tab of a new context has no token: the sign-in page
  await tab.waitForSelector("#signin:not([hidden])");
  await tab.evaluate((t) => sessionStorage.setItem("crucible.token", t), token);
  const t0 = Date.now();
  await tab.reload();
  await tab.waitForSelector("body[data-editor-ready=true]");
  const toEditor = Date.now() - t0;
  await tab.close();

  const setCode = async (code) => {
    await page.click(".cm-content");
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Delete");
    await page.keyboard.insertText(code);
    const typed = await page.evaluate(() =>
      [...document.querySelectorAll(".cm-line")].map((l) => l.textContent).join("\n"),
    );
    assert.equal(typed, code, "the editor holds the code");
  };
  await setCode("print(1)");
  // Ctrl-Enter to the output of print(1) against the same request by curl, taken in turns (the first of each warms
  // the server's caches), each figure the median of five
  const timed = { page: [], inPage: [], curl: [] };
  for (let round = 0; round < 6; round++) {
    await page.evaluate(() => {
      document.getElementById("verdict").removeAttribute("data-status");
    });
    const t1 = performance.now();
    await page.keyboard.press("Control+Enter");
    await page.waitForSelector("#verdict[data-status]");
    if (round > 0) timed.page.push(performance.now() - t1);
    if (round > 0) timed.inPage.push(Number(await page.getAttribute("#verdict", "data-took-ms")));
    assert.equal(await page.textContent("#stdout"), "1\n");
    assert.equal(await page.getAttribute("#verdict", "data-status"), "ok");
    // the verdict in human units: a time in ms or s, the memory in KiB or MiB
    assert.match(await page.textContent("#verdict"), /^ok.*exit 0.*\d+(\.\d+)? m?s wall.*\d+(\.\d+)? (KiB|MiB) memory/);
    const t2 = performance.now();
    execFileSync("curl", [
      "-s",
      "-o",
      "/dev/null",
      "-H",
      `Authorization: Bearer ${token}`,
      "-H",
      "Content-Type: application/json",
      "-d",
      '{"language": "python", "code": "print(1)"}',
      `${url}/v1/execute`,
    ]);
    if (round > 0) timed.curl.push(performance.now() - t2);
  }
  const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)].toFixed(0);
  const toOutput = median(timed.page),
    inPage = median(timed.inPage),
    byCurl = median(timed.curl);
  await page.screenshot({ path: `${shots}/console-run.png` });

  // hostile output: markup, a script and an SVG with script, printed by the program, must stay text
  await page.evaluate(() => {
    document.getElementById("verdict").removeAttribute("data-status");
  });
  await setCode(
    'print("<script>window.pwned=1</script><img src=x onerror=\\"window.pwned=2\\">' +
      '<svg onload=\\"window.pwned=3\\"><script>window.pwned=4</script></svg>")',
  );
  await page.keyboard.press("Control+Enter");
  await page.waitForSelector("#verdict[data-status]");
  assert.match(await page.textContent("#stdout"), /<script>window\.pwned=1<\/script>/);
  assert.equal(await page.evaluate(() => window.pwned), undefined, "nothing a sandbox printed ran");
  assert.equal(await page.locator("#stdout *").count(), 0, "the output holds text, no element");
  // this tab's runs, newest first; a click puts a run's code and output back
  await page.waitForFunction(() => document.body.dataset.runs === "7");
  assert.match(await page.textContent("#runs tbody tr:last-child"), /^1python\s*print\(1\)ok\d/);
  assert.equal(await page.locator("#runs tbody code *").count(), 0, "the code in the table is text");
  await page.click("#runs tbody tr:last-child");
  assert.equal(
    await page.evaluate(() => [...document.querySelectorAll(".cm-line")].map((l) => l.textContent).join("\n")),
    "print(1)",
  );
  assert.equal(await page.textContent("#stdout"), "1\n");

  await page.click('nav a[data-page="server"]');
  await page.waitForFunction(() => document.getElementById("health").textContent.includes("status"));
  assert.match(await page.textContent("#health"), /statusok/);
  await page.waitForFunction(() => document.getElementById("counters").textContent.includes("pool_ready"));
  assert.match(await page.textContent("#parts"), /admission.*slots/, "each part's state");
  // the dashboard under load: runs from outside the page while it samples the server
  const load = Array.from({ length: 12 }, (_, i) =>
    fetch(`${url}/v1/execute`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ language: "python", code: `import time; time.sleep(0.3); print(${i})` }),
    }),
  );
  await Promise.all(load);
  await page.waitForFunction(() => Number(document.body.dataset.samples ?? 0) >= 3);
  const rate = Number(await page.getAttribute("#chart-rate", "data-max"));
  assert.ok(rate > 2, `the requests chart saw the load (${rate}/s)`); // the page alone: 1/s
  assert.equal(await page.locator("#chart-load polyline").count(), 2);
  // axes: round ticks in the unit of the series, and the time before now
  const ticks = await page.locator("#chart-rate .tick").allTextContents();
  assert.ok(
    ticks.includes("now") && ticks.some((t) => /^−\d+ (s|min)$/.test(t)) && ticks.includes("0/s"),
    `the rate chart's axes: ${ticks}`,
  );
  assert.ok(
    (await page.locator("#chart-latency .tick").allTextContents()).some((t) => / m?s$/.test(t)),
    "the latency chart's axis in ms or s",
  );
  assert.match(await page.textContent("#health"), /memory\d+(\.\d+)? (MiB|GiB)/, "the server's memory in MiB");
  assert.match(await page.textContent("#health"), /uptime\d+(\.\d+)? (ms|s|min)/, "its uptime as a duration");
  // the counters: a filter keeps the matching rows, a header sorts
  const allCounters = await page.locator("#counters tbody tr").count();
  await page.fill('#server input[aria-label="filter counters"]', "pool_");
  await page
    .waitForFunction((all) => {
      const rows = [...document.querySelectorAll("#counters tbody tr")];
      return rows.length > 0 && rows.length < all && rows.every((tr) => tr.textContent.includes("pool_"));
    }, allCounters)
    .catch(async (e) => {
      throw new Error(
        `the counters filtered by pool_ (of ${allCounters}): ${await page.textContent("#counters")}\n${e}`,
      );
    });
  await page.click("#counters th[data-key=value] button");
  assert.equal(await page.getAttribute("#counters th[data-key=value]", "aria-sort"), "descending");
  const values = await page.evaluate(() =>
    [...document.querySelectorAll("#counters tbody tr")]
      .filter((tr) => /^[\d,.]+$/.test(tr.cells[2].textContent)) // counts (sizes and times sort by their value too)
      .map((tr) => Number(tr.cells[2].textContent.replace(/,/g, ""))),
  );
  assert.deepEqual(
    values,
    [...values].sort((a, b) => b - a),
    `sorted by value, largest first: ${values}`,
  );
  await page.fill('#server input[aria-label="filter counters"]', "");
  await page.screenshot({ path: `${shots}/console-server.png` });

  // a session as a notebook: a figure, hostile HTML and SVG in frames that run nothing, a traceback and file names
  // with markup as text, an upload, a pause
  await page.click('nav a[data-page="sessions"]');
  await page.selectOption("#session-isolation", "namespaces");
  await page.fill("#session-memory", "384");
  await page.click("#session-new");
  await page.waitForFunction(() => document.body.dataset.sessions === "1" && document.body.dataset.session);
  // the session's info: its tier, its limits in human units; the list shows the same
  await page.waitForFunction(
    () => document.querySelector('#session-info [data-fact="memory"]')?.textContent === "384 MiB",
  );
  assert.equal(await page.textContent('#session-info [data-fact="tier"]'), "namespaces");
  assert.match(await page.textContent('#session-info [data-fact="cell timeout"]'), /^\d+(\.\d+)? (s|min)/);
  assert.match(await page.textContent("#sessions-table tbody"), /python.*namespaces.*(running|dormant).*384 MiB/);
  assert.match(page.url(), /#sessions\/[^/]+$/, "the open session is in the URL");
  const cell = async (code) => {
    const before = await page.locator(".cell[data-done]").count();
    await page.fill("#cell", code);
    await page.click("#cell-run");
    await page.waitForFunction((n) => document.querySelectorAll(".cell[data-done]").length > n, before);
    return page.locator(".cell").last();
  };
  const figure = await cell(
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
      "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()",
  );
  assert.match(await figure.locator("img").getAttribute("src"), /^data:image\/png;base64,iVBOR/);
  const hostile = await cell(
    'class Page:\n    def _repr_html_(self):\n        return \'<b id="inside">bold</b>' +
      '<script>parent.pwned = 5</script><img src=x onerror="parent.pwned = 6">\'\n' +
      'class Drawing:\n    def _repr_svg_(self):\n        return \'<svg xmlns="http://www.w3.org/2000/svg" ' +
      'onload="parent.pwned = 7"><script>parent.pwned = 8</script><circle r="5"/></svg>\'\n' +
      "display(Page(), Drawing())",
  );
  assert.equal(await hostile.locator("iframe").count(), 2);
  for (const frame of await hostile.locator("iframe").all()) {
    assert.equal(await frame.getAttribute("sandbox"), "", "a frame with no permission: an opaque origin, no script");
  }
  const inner = page.frames().find((f) => f !== page.mainFrame());
  assert.ok(inner, "the HTML rendered in its frame");
  assert.match(await inner.content(), /<b id="inside">bold<\/b>/, "the HTML rendered in its frame");
  await page.waitForTimeout(200); // an onerror or onload that could run would have run by now
  assert.equal(await page.evaluate(() => window.pwned), undefined, "nothing in a frame reached the console");
  const failing = await cell("raise ValueError('\\x1b[31m<b>red</b> & <script>x</script>')");
  assert.match(await failing.locator("pre.err").textContent(), /<b>red<\/b> & <script>x<\/script>/);
  assert.equal(await page.locator("#cells b, #cells script").count(), 0, "a traceback is text");
  const id = await page.evaluate(() => document.body.dataset.session);
  const marked = "<img src=x onerror=alert(1)> & <b>name.txt"; // no slash: one name, not a path
  const put = await fetch(`${url}/v1/sessions/${id}/files/${encodeURIComponent(marked)}`, {
    method: "PUT",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/octet-stream" },
    body: "x",
  });
  assert.ok(put.ok, `PUT a file named with markup: ${put.status}`);
  await page.setInputFiles("#upload", {
    name: "uploaded.csv",
    mimeType: "text/csv",
    buffer: Buffer.from("a,b\n1,2\n"),
  });
  await page.waitForFunction(() => document.getElementById("files").textContent.includes("uploaded.csv"));
  await page.click("#files-refresh");
  await page.waitForFunction((m) => document.getElementById("files").textContent.includes(m), marked);
  assert.equal(await page.locator("#files img, #files b").count(), 0, "a file name is text");
  await page.click("#session-pause");
  await page.waitForFunction(() => document.getElementById("session-status").textContent.startsWith("pause:"));
  const after = await cell("print(open('uploaded.csv').read())");
  assert.match(await after.textContent(), /a,b\s+1,2/);
  // a snapshot: taken from the session's bar, listed with its size, deleted from the list
  await page.fill("#snapshot-name", "console-demo");
  await page.click("#session-snapshot");
  await page
    .waitForFunction(() => document.getElementById("session-status").textContent.startsWith("snapshot: console-demo"))
    .catch(async (e) => {
      throw new Error(`${await page.textContent("#session-status")}\n${e}`);
    });
  await page.waitForFunction(() => document.body.dataset.snapshots === "1");
  await page.click("details.snapshots summary");
  assert.match(await page.textContent("#snapshots tbody"), /console-demo\s*python.*\d+(\.\d+)? (B|KiB|MiB|GiB)/);
  await page.click("#snapshots button.danger");
  await page.waitForFunction(() => document.body.dataset.snapshots === "0");
  await page.click("details.snapshots summary");

  // the whole file system of the session, not only its workspace
  await page.fill("#files-dir", "/etc");
  await page.click("#files-refresh");
  await page.waitForFunction(
    () =>
      document.body.dataset.filesDir === "/etc" && document.getElementById("files").textContent.includes("/etc/passwd"),
  );
  await page.click("#files-up");
  await page.waitForFunction(
    () =>
      document.body.dataset.filesDir === "/" && document.getElementById("files").textContent.includes("/workspace/"),
  );
  await page.click("#files .dir >> text=/workspace/");
  await page.waitForFunction(() => document.getElementById("files").textContent.includes("uploaded.csv"));

  // a terminal: xterm.js over the WebSocket, the token sent as a subprotocol (a browser cannot send the header)
  await page.click("#terminal-open");
  await page.waitForSelector("body[data-terminal=open]");
  await page.keyboard.type("echo $((6 * 7))-from-the-terminal\n");
  const screen = () =>
    page.evaluate(() => {
      const buffer = window.crucibleTerminal.buffer.active;
      return Array.from({ length: buffer.length }, (_, i) => buffer.getLine(i)?.translateToString(true)).join("\n");
    });
  await page
    .waitForFunction(
      () => {
        const buffer = window.crucibleTerminal?.buffer.active;
        return (
          buffer &&
          Array.from({ length: buffer.length }, (_, i) => buffer.getLine(i)?.translateToString(true)).some(
            (line) => line === "42-from-the-terminal",
          )
        );
      },
      null,
      { timeout: 30_000 },
    )
    .catch(async (e) => {
      throw new Error(`the terminal shows:\n${await screen()}\n${e}`);
    });

  // a wider window: the terminal takes the new width, and its shell is told (stty shows the size it now has)
  await page.waitForSelector("body[data-terminal-pid]");
  const before = await page.evaluate(() => window.crucibleTerminal.cols);
  await page.setViewportSize({ width: 1400, height: 760 });
  await page.waitForFunction((c) => window.crucibleTerminal.cols > c, before);
  const size = await page.evaluate(() => `${window.crucibleTerminal.rows} ${window.crucibleTerminal.cols}`);
  await page.keyboard.type("stty size\n");
  await page
    .waitForFunction(
      (expected) => {
        const buffer = window.crucibleTerminal.buffer.active;
        return Array.from({ length: buffer.length }, (_, i) => buffer.getLine(i)?.translateToString(true)).some(
          (line) => line === expected,
        );
      },
      size,
      { timeout: 30_000 },
    )
    .catch(async (e) => {
      throw new Error(`want ${size}; the terminal shows:\n${await screen()}\n${e}`);
    });
  await page.setViewportSize({ width: 1100, height: 760 });

  // processes: a server started from the page, found listening, previewed in a tab fenced off from the console
  await page.click('.tabs button[data-tab="processes"]');
  await page.waitForFunction(() => Number(document.body.dataset.processes) >= 1); // the terminal's shell
  await cell(
    "open('index.html', 'w').write('''<!doctype html><title>waiting</title><script>\n" +
      "let storage; try { storage = String(sessionStorage.getItem('crucible.token')); } catch (e) { storage = e.name; }\n" +
      "fetch('/v1/sessions').then((r) => r.text()).then((t) => 'read ' + t.slice(0, 40), (e) => 'blocked')\n" +
      "  .then((f) => { document.title = 'origin ' + origin + '; storage ' + storage + '; fetch ' + f; });\n" +
      "</script>''')",
  );
  await cell("open('evil.js', 'w').write('window.previewScriptRan = true;')");
  // a hostile server: every answer asks the browser to clear its origin's data (the API's, were it passed)
  await cell(
    "open('serve.py', 'w').write('''import http.server as h\\n" +
      "class H(h.SimpleHTTPRequestHandler):\\n" +
      "    def end_headers(self):\\n" +
      "        self.send_header('Clear-Site-Data', '\\x22*\\x22')\\n" +
      "        super().end_headers()\\n" +
      "h.ThreadingHTTPServer(('127.0.0.1', 8123), H).serve_forever()\\n''')",
  );
  await page.fill("#process-command", "exec python3 serve.py");
  await page.click("#process-start button");
  await page.waitForFunction(() => Number(document.body.dataset.processes) >= 2);
  await page.waitForFunction(
    () => document.querySelector('#session-info [data-fact="running"]')?.textContent.includes("serve.py"),
    null,
    { timeout: 10_000 },
  ); // the session's info lists what runs in it
  await page.click('.tabs button[data-tab="ports"]');
  for (let i = 0; i < 100 && Number(await page.evaluate(() => document.body.dataset.ports ?? 0)) < 1; i++) {
    await page.waitForTimeout(100); // the server in the session binds its port in its own time
    await page.click("#ports-refresh");
  }
  assert.match(await page.textContent("#ports"), /8123/);
  await page.click("#ports button.preview-make");
  const href = await page.getAttribute("#ports a.preview", "href");
  assert.match(href, /\/v1\/previews\/[^/]+\/$/);
  assert.equal(await page.getAttribute("#ports a.preview", "rel"), "noopener noreferrer");
  const preview = await browser.newPage();
  await preview.goto(href);
  await preview.waitForFunction(() => document.title !== "waiting");
  const seen = await preview.title();
  assert.match(
    seen,
    /^origin null; storage SecurityError; fetch blocked$/,
    `a preview runs in an opaque origin: no storage, no API (${seen})`,
  );
  await preview.close();
  assert.equal(
    await page.evaluate(() => sessionStorage.getItem("crucible.token")),
    token,
    "a preview (and its Clear-Site-Data) leaves the console's storage alone",
  );
  // a script a session serves on this origin is refused by the console's policy (scripts by nonce only)
  refusalExpected = true;
  const refused = await page.evaluate(
    (src) =>
      new Promise((done) => {
        document.addEventListener("securitypolicyviolation", (e) => done(`refused ${e.effectiveDirective}`), {
          once: true,
        });
        const s = document.createElement("script");
        s.src = src;
        s.onload = () => done(`ran ${window.previewScriptRan}`);
        s.onerror = () => done("error");
        document.head.append(s);
      }),
    `${href}evil.js`,
  );
  refusalExpected = false;
  assert.match(refused, /^refused script-src/, `a preview's script never runs in the console (${refused})`);
  assert.equal(await page.evaluate(() => window.previewScriptRan), undefined);
  await page.bringToFront(); // the console's tab again: its frames are painted for the screenshot
  await page.click('.tabs button[data-tab="processes"]');
  await page.click("#processes .dir >> text=/serve.py/");
  await page.waitForFunction(() => document.getElementById("process-output").textContent.includes("GET / HTTP"));
  await page.click('.tabs button[data-tab="files"]');
  // the whole page in the viewport: Chromium paints a frame scrolled out of it lazily, and a full-page shot may miss it
  await page.setViewportSize({ width: 1100, height: await page.evaluate(() => document.body.scrollHeight) });
  await page.evaluate(() => new Promise((painted) => requestAnimationFrame(() => requestAnimationFrame(painted))));
  await page.screenshot({ path: `${shots}/console-session.png` });
  await page.setViewportSize({ width: 1100, height: 760 });

  // a real eval dataset run's results, read in the tab: pass@k, filters, a sample beside its problem
  await page.click('nav a[data-page="evaluations"]');
  await page.setInputFiles("#eval-samples", process.env.EVAL_SAMPLES);
  await page.setInputFiles("#eval-problems", process.env.EVAL_PROBLEMS);
  await page.setInputFiles("#eval-results", process.env.EVAL_RESULTS);
  await page.waitForFunction(() => document.body.dataset.evalRows === "6");
  assert.match(await page.textContent("#eval-summary"), /pass@1/);
  await page.selectOption("#eval-filter", "timeout");
  await page.waitForFunction(
    () => Number(document.body.dataset.evalRows) >= 1 && document.body.dataset.evalRows !== "6",
  );
  await page.selectOption("#eval-filter", "failed");
  const failed = Number(await page.evaluate(() => document.body.dataset.evalRows));
  assert.ok(failed >= 2 && failed < 6, `some samples failed (${failed}), not all`);
  await page.click("#eval-table tbody tr:first-child");
  assert.match(await page.textContent("#eval-sample"), /def return1\(\):/);
  assert.match(await page.textContent("#eval-sample"), /def check\(candidate\)/);
  // the same problems and samples run on the server: followed to the end, opened, the same verdicts
  // the samples table sorts by a header (the numbers as numbers) and filters by what is typed
  await page.selectOption("#eval-filter", "all");
  await page.click("#eval-table th[data-key=time] button");
  const times = await page.evaluate(() =>
    [...document.querySelectorAll("#eval-table tbody tr")].map((tr) => tr.cells[5].textContent),
  );
  assert.ok(
    times.every((t) => /^\d+(\.\d+)? (ms|s)$/.test(t)),
    `times in ms or s: ${times}`,
  );
  const ms = times.map((t) => Number(t.split(" ")[0]) * (t.endsWith(" s") ? 1000 : 1));
  assert.deepEqual(
    ms,
    [...ms].sort((a, b) => b - a),
    `sorted by time, longest first: ${times}`,
  );
  await page.fill('#evaluations input[aria-label="filter eval-table"]', "timeout");
  await page.waitForFunction(
    () => Number(document.body.dataset.evalRows) >= 1 && document.body.dataset.evalRows !== "6",
  );
  await page.fill('#evaluations input[aria-label="filter eval-table"]', "");
  await page.click("#eval-table th[data-key=task] button");
  await page.selectOption("#eval-filter", "failed");
  const rowsOf = () =>
    page.evaluate(() =>
      [...document.querySelectorAll("#eval-table tbody tr")].map((tr) =>
        [...tr.cells]
          .slice(0, 5)
          .map((td) => td.textContent)
          .join(" | "),
      ),
    );
  const fromFile = await rowsOf();
  await page.fill("#eval-timeout", "3");
  await page.click("#eval-start button");
  await page.waitForFunction(
    () => document.body.dataset.evalRuns === "running" || document.body.dataset.evalRuns === "done",
  );
  await page.waitForFunction(() => document.body.dataset.evalRuns === "done", null, { timeout: 120_000 });
  assert.match(await page.textContent("#eval-runs"), /6 \/ 6/);
  await page.click("#eval-runs tr[data-state=done] button >> text=open");
  await page.waitForFunction(() => document.body.dataset.evalOpened !== undefined);
  const fromServer = await rowsOf();
  assert.deepEqual(fromServer, fromFile, "the server's run shows the verdicts of the file's (the failed ones, here)");
  await page.screenshot({ path: `${shots}/console-eval.png`, fullPage: true });
  assert.deepEqual(dialogs, [], "no dialog opened");
  assert.deepEqual(pageErrors, [], "no uncaught exception in the console");
  assert.deepEqual(
    violations,
    [],
    "no Content-Security-Policy violation (the editor's and the terminal's styles carry" + " the nonce)",
  );
  console.log(
    `console: /ui/ to an interactive editor ${toEditor} ms; Ctrl-Enter to the output of print(1)` +
      ` ${toOutput} ms (${inPage} ms of it in the page, from the key to the verdict); the same request by curl` +
      ` ${byCurl} ms`,
  );
  console.log("console browser checks: ok");
} finally {
  await browser.close();
}
