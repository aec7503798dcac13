// The SDK against a real server (started by TypeScriptSdkTest with one run at a time and no queue, so that a second
// run at once is refused with 429 and Retry-After): every part of the API the SDK wraps, its typed errors, its
// retries and its cancellation.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CrucibleError } from "../dist/index.js";
import { crucible, until, url } from "./env.mjs";

test("a run, streamed or not, its runtimes, and a refused one as a typed error", async () => {
  const c = crucible();
  const run = await c.execute({ language: "python", code: "print(6 * 7)" });
  assert.equal(run.status, "ok");
  assert.equal(run.stdout, "42\n");

  const events = [];
  for await (const e of c.executeStream({
    language: "python",
    code: "import sys, time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.05)\nsys.exit(3)",
  })) {
    events.push(e);
  }
  assert.equal(
    events
      .filter((e) => e.type === "stdout")
      .map((e) => e.data)
      .join(""),
    "0\n1\n2\n",
  );
  const last = events.at(-1);
  assert.equal(last.type, "result");
  assert.equal(last.result.exit_code, 3);

  const runtimes = await c.runtimes();
  assert.ok(runtimes.some((r) => r.language === "python" && r.available));

  await assert.rejects(
    c.execute({ language: "cobol", code: "x" }),
    (e) => e instanceof CrucibleError && e.status === 400 && e.code === "unknown_language" && e.is("unknown_language"),
  );
  await assert.rejects(crucible({ token: "wrong" }).runtimes(), (e) => e.status === 401 && e.code === "unauthorized");
});

test("a refusal with Retry-After is asked again, and a call is cancelled by its AbortSignal", async () => {
  const c = crucible();
  const long = c.execute({ language: "python", code: "import time; time.sleep(3); print('first')" });
  // the state the refusal needs: the only run slot is taken (the queue holds none)
  await until(async () => (await c.health()).running === 1, 90_000, "the first run in the only slot");
  const refused = crucible({ maxRetries: 0 }).execute({ language: "python", code: "print('refused')" });
  await assert.rejects(refused, (e) => e.status === 429 && e.code === "too_many_requests" && e.retryAfterS >= 1);
  const second = await crucible({ maxRetries: 30 }).execute({ language: "python", code: "print('second')" }); // retried
  assert.equal(second.stdout, "second\n");
  assert.equal((await long).stdout, "first\n");

  const controller = new AbortController();
  const started = Date.now();
  const slow = c.execute({ language: "python", code: "import time; time.sleep(20)" }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  await assert.rejects(slow, (e) => e instanceof CrucibleError && e.code === "aborted");
  // an event order, not a timing: the call ended by the abort, long before the program's own 20 s could end it
  assert.ok(Date.now() - started < 15_000, "the abort ended the call before the program did");
  await assert.rejects(
    c.execute({ language: "python", code: "import time; time.sleep(20)" }, { timeoutMs: 300 }),
    (e) => e.code === "timeout",
  );
  await until(async () => (await c.health()).running === 0, 90_000, "the cancelled runs' end");
});

test("evaluation, rewards and a batch of rewards", async () => {
  const c = crucible();
  const judged = await c.evaluate({
    language: "python",
    code: "print(int(input()) * 2)",
    testcases: [
      { stdin: "2", expect: "4" },
      { stdin: "3", expect: "7" },
    ],
    run_all_cases: true,
  });
  assert.equal(judged.passed, 1);
  assert.equal(judged.total, 2);
  assert.deepEqual(
    judged.results.map((r) => r.passed),
    [true, false],
  );

  const messages = [{ role: "assistant", content: "```python\nprint(int(input()) + 1)\n```" }];
  const reward = await c.reward({ messages, test_cases: [{ input: "1", expected_output: "2" }] });
  assert.equal(reward.score, 1);
  const batch = await c.rewardBatch([
    { messages, test_cases: [{ input: "1", expected_output: "2" }] },
    { messages, test_cases: [{ input: "1", expected_output: "3" }] },
  ]);
  assert.deepEqual(
    batch.results.map((r) => r.score),
    [1, 0],
  );
  assert.equal(batch.mean_score, 0.5);
});

test("a session: cells, files, commands streamed or in the background, a terminal, ports and previews", async () => {
  const c = crucible();
  const s = await c.createSession({ language: "python" });
  try {
    assert.equal((await s.run("x = 41")).status, "ok");
    assert.equal((await s.run("x + 1")).result, "42");

    await s.writeFile("data/in.txt", "3 4 5");
    assert.equal(await s.readText("data/in.txt"), "3 4 5");
    await s.writeFile("bin.dat", new Uint8Array([0, 255, 7]));
    assert.deepEqual([...(await s.readFile("bin.dat"))], [0, 255, 7]);
    assert.ok((await s.listFiles("data")).some((f) => f.path === "data/in.txt" && f.type === "file"));
    await s.deleteFile("bin.dat");
    await assert.rejects(s.readFile("bin.dat"), (e) => e.status === 404 && e.code === "file_not_found");

    const done = await s.command("cat data/in.txt; echo; exit 3");
    assert.equal(done.exit_code, 3);
    assert.equal(done.stdout, "3 4 5\n");
    const chunks = [];
    for await (const e of s.commandStream({ argv: ["sh", "-c", "echo one; sleep 0.1; echo two >&2"] })) chunks.push(e);
    assert.deepEqual(
      chunks.filter((e) => e.type !== "result").map((e) => `${e.type}:${e.data}`),
      ["stdout:one\n", "stderr:two\n"],
    );
    assert.equal(chunks.at(-1).result.exit_code, 0);

    const cat = await s.startProcess({ argv: ["cat"] }, { stdinOpen: true });
    await s.writeStdin(cat.pid, "echoed\n", true);
    const out = await until(
      async () => {
        const o = await s.processOutput(cat.pid, 0, 1000);
        return o.ended ? o : null;
      },
      30_000,
      "cat's end",
    );
    assert.equal(out.stdout, "echoed\n");
    const sleeper = await s.startProcess("sleep 600");
    assert.equal(await s.signal(sleeper.pid, "KILL"), true);
    assert.ok((await s.processes()).some((p) => p.pid === sleeper.pid));

    const terminal = await s.terminal({ rows: 24, cols: 80 });
    let seen = "";
    terminal.onData((d) => {
      seen += new TextDecoder().decode(d);
    });
    await until(() => seen.includes("$ "), 30_000, "the shell's prompt");
    terminal.write("echo $((6 * 7))-from-the-terminal\n");
    await until(() => seen.includes("42-from-the-terminal"), 30_000, "the command's output");
    terminal.write("exit 4\n");
    const closed = await terminal.closed; // the shell's end closes it (Node 20's WebSocket may not keep the reason)
    assert.ok(closed.code === 1000 || closed.code === 1006, `closed with ${closed.code} ${closed.reason}`);

    await s.startProcess({ argv: ["python3", "-m", "http.server", "8123", "--bind", "127.0.0.1"] });
    await until(async () => (await s.ports()).some((p) => p.port === 8123), 60_000, "the server in the session");
    const listing = await fetch(s.portUrl(8123, "/data/"), {
      headers: c.http.token ? { Authorization: `Bearer ${c.http.token}` } : {},
    });
    assert.equal(listing.status, 200);
    assert.match(await listing.text(), /in\.txt/);
    const preview = await s.preview(8123, 60);
    const opened = await fetch(new URL(preview.url, url));
    assert.equal(opened.status, 200, "a preview link needs no token");

    const locked = await s.lockNetwork();
    assert.equal(locked.id, s.id);
    assert.equal((await s.refresh()).state, "running");
  } finally {
    await s.delete();
  }
  await assert.rejects(s.run("1"), (e) => e.status === 404 && e.code === "session_not_found");
});

test("a session paused, resumed, forked and snapshotted; a commit of a session on the host's files is refused", async () => {
  const c = crucible();
  const s = await c.createSession({ language: "python", restore: "replay" });
  const made = [];
  try {
    await s.run("y = 5");
    await s.writeFile("kept.txt", "kept");
    const paused = await s.pause();
    assert.equal(paused.state, "paused");
    assert.equal(paused.keeps, "replay");
    assert.equal((await s.resume()).restored, "replay");
    assert.equal((await s.run("y * 2")).result, "10");

    const forks = await s.fork(2);
    made.push(...forks);
    assert.equal(forks.length, 2);
    assert.equal(await forks[0].readText("kept.txt"), "kept");
    assert.equal((await forks[1].run("y + 1")).result, "6");

    const snap = await s.snapshot("ts-sdk");
    assert.equal(snap.name, "ts-sdk");
    assert.ok((await c.snapshots()).some((x) => x.name === "ts-sdk"));
    const fromSnap = await c.createSession({ snapshot: "ts-sdk" });
    made.push(fromSnap);
    assert.equal(fromSnap.info.restored, "replay");
    assert.equal((await fromSnap.run("y")).result, "5");
    await assert.rejects(s.snapshot("ts-sdk"), (e) => e.status === 409 && e.code === "snapshot_exists");
    await c.deleteSnapshot("ts-sdk");
    await assert.rejects(c.deleteSnapshot("ts-sdk"), (e) => e.code === "snapshot_not_found");

    await assert.rejects(s.commit("local/never:1"), (e) => e.status === 422 && e.code === "commit_unavailable");
    assert.ok((await c.sessions()).some((x) => x.id === s.id));
  } finally {
    for (const m of made) await m.delete();
    await s.delete();
  }
});

test("tool calls as a model makes them, with the server's definitions", async () => {
  const c = crucible();
  const openai = await c.tools("openai", "all");
  assert.ok(openai.some((t) => t.function.name === "run_code"));
  const ran = await c.callTool("run_code", JSON.stringify({ code: "print(2 ** 10)" }));
  assert.equal(ran.is_error, false);
  assert.equal(ran.content[0].text, "1024\n");
  const wrong = await c.callTool("no_such_tool", {});
  assert.equal(wrong.is_error, true);
});

test("a dataset evaluated by the server, followed to its end, read and deleted", async () => {
  const c = crucible();
  const problems = JSON.stringify({
    task_id: "t/0",
    prompt: "def one():\n",
    entry_point: "one",
    test: "def check(candidate):\n    assert candidate() == 1\n",
    canonical_solution: "    return 1\n",
  });
  const samples = [
    JSON.stringify({ task_id: "t/0", completion: "    return 1\n" }),
    JSON.stringify({ task_id: "t/0", completion: "    return 2\n" }),
  ].join("\n");
  const started = await c.startEvaluation({ format: "humaneval", problems, samples, k: [1], timeout_ms: 5000 });
  assert.equal(started.state, "running");
  assert.equal(started.total, 2);
  const run = await c.awaitEvaluation(started.id, 100);
  assert.equal(run.state, "done");
  assert.equal(run.passed, 1);
  assert.equal(run.summary.pass_at_k["pass@1"], 0.5);
  const results = await c.evaluationResults(started.id);
  assert.deepEqual(
    results
      .filter((r) => r.task_id)
      .map((r) => [r.sample, r.passed])
      .sort(),
    [
      [0, true],
      [1, false],
    ],
  );
  assert.ok(results.at(-1).summary);
  assert.ok((await c.evaluationRuns()).some((r) => r.id === started.id));
  await assert.rejects(
    c.startEvaluation({ format: "cobol", problems }),
    (e) => e.status === 400 && e.code === "invalid_request",
  );
  await c.deleteEvaluation(started.id);
  await assert.rejects(c.evaluationRun(started.id), (e) => e.status === 404 && e.code === "not_found");
});
