// The official E2B SDKs from npm (e2b, @e2b/code-interpreter), unmodified, against Crucible's E2B-compatible API.
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (the SDKs read them themselves). Argument: `all` (default), `reward`,
// `burst` (E2B_BURST creates at once) or `replicas` (E2B_OTHER_URL: a second replica the sandbox is driven through).
// Prints one JSON line per step, {"step", "ok", "detail"} (plus "optional": true for a step whose failure is reported but
// not counted), then {"passed", "failed", "optional_failed"}; exits 0 only when failed == 0.
import { Sandbox, CommandExitError, NotFoundError, TimeoutError } from '@e2b/code-interpreter';
import { Sandbox as BaseSandbox, Template } from 'e2b';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const STEP_TIMEOUT_MS = 90_000;
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

const state = {}; // what steps produced, by name; a step needing a missing one fails without running
let passed = 0;
let failed = 0;
let optionalFailed = 0;

process.on('unhandledRejection', (e) => console.error('unhandled rejection:', e));

function describe(e) {
  if (!(e instanceof Error)) return String(e);
  const extra = e.exitCode !== undefined
    ? ` exitCode=${e.exitCode} stdout=${JSON.stringify(e.stdout)} stderr=${JSON.stringify(e.stderr)}`
    : '';
  return `${e.name}: ${e.message}${extra}`.slice(0, 600);
}

function report(step, ok, detail, optional) {
  const line = { step, ok, detail: String(detail ?? '').slice(0, 800) };
  if (optional) line.optional = true;
  console.log(JSON.stringify(line));
  if (ok) passed++;
  else if (optional) optionalFailed++;
  else failed++;
}

/** Runs fn (its return value is the detail; a throw fails the step) when every name in needs is in state. */
async function step(name, needs, fn, { optional = false } = {}) {
  const missing = needs.filter((n) => state[n] === undefined);
  if (missing.length > 0) {
    report(name, false, `not run: needs ${missing.join(', ')} (an earlier step failed)`, optional);
    return;
  }
  let timer;
  try {
    const detail = await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`step timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
      }),
    ]);
    report(name, true, detail, optional);
  } catch (e) {
    report(name, false, describe(e), optional);
  } finally {
    clearTimeout(timer);
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function eq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const b = JSON.stringify(expected);
  check(a === b, `${what}: expected ${b}, got ${a}`);
}

/** The promise's rejection, or an error when it resolves. */
async function rejection(promise, what) {
  try {
    const value = await promise;
    throw new Error(`${what} resolved instead of throwing: ${JSON.stringify(value)?.slice(0, 300)}`);
  } catch (e) {
    if (e instanceof Error && e.message.startsWith(`${what} resolved`)) throw e;
    return e;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

async function listAll(opts) {
  const paginator = Sandbox.list(opts);
  const items = [];
  let pages = 0;
  while (paginator.hasNext && pages < 50) {
    items.push(...(await paginator.nextItems()));
    pages++;
  }
  return { items, pages };
}

async function scenarioAll() {
  await step('Sandbox.create (code-interpreter, metadata, envs, timeoutMs)', [], async () => {
    state.sbx = await Sandbox.create({ metadata: { suite: 'e2e' }, envs: { FOO: 'bar' }, timeoutMs: 120_000 });
    state.id = state.sbx.sandboxId;
    check(typeof state.id === 'string' && state.id.length > 0, 'no sandboxId');
    return `sandboxId=${state.id}`;
  });
  const sbx = () => state.sbx;

  await step('isRunning -> true', ['sbx'], async () => {
    eq(await sbx().isRunning(), true, 'isRunning');
    return 'true';
  });

  await step('getInfo (sandboxId, metadata, templateId)', ['sbx'], async () => {
    const info = await sbx().getInfo();
    eq(info.sandboxId, state.id, 'sandboxId');
    eq(info.metadata?.suite, 'e2e', 'metadata.suite');
    check(typeof info.templateId === 'string' && info.templateId.length > 0, `templateId missing: ${info.templateId}`);
    check(!Number.isNaN(info.startedAt.getTime()) && !Number.isNaN(info.endAt.getTime()), 'startedAt/endAt not dates');
    return `templateId=${info.templateId} state=${info.state} envdVersion=${info.envdVersion} ends in ${Math.round((info.endAt - Date.now()) / 1000)} s`;
  });

  await step('setTimeout(180000)', ['sbx'], async () => {
    await sbx().setTimeout(180_000);
    const info = await sbx().getInfo();
    const left = (info.endAt - Date.now()) / 1000;
    check(left > 150 && left <= 200, `endAt after setTimeout(180 s) is ${Math.round(left)} s away`);
    return `endAt now ${Math.round(left)} s away`;
  });

  await step('Sandbox.list() paginator contains the sandbox', ['sbx'], async () => {
    const { items, pages } = await listAll();
    const mine = items.find((s) => s.sandboxId === state.id);
    check(mine, `not among ${items.length} listed: ${items.map((s) => s.sandboxId).join(',')}`);
    eq(mine.metadata?.suite, 'e2e', 'listed metadata.suite');
    return `${items.length} sandboxes in ${pages} page(s); state=${mine.state} templateId=${mine.templateId}`;
  });

  await step('Sandbox.list({query: {metadata}}) filters', ['sbx'], async () => {
    const hit = await listAll({ query: { metadata: { suite: 'e2e' } } });
    check(hit.items.some((s) => s.sandboxId === state.id), 'metadata suite=e2e does not list it');
    const miss = await listAll({ query: { metadata: { suite: 'no-such-suite' } } });
    check(!miss.items.some((s) => s.sandboxId === state.id), 'metadata suite=no-such-suite lists it');
    return `suite=e2e: ${hit.items.length}, suite=no-such-suite: ${miss.items.length}`;
  });

  await step('Sandbox.connect(id) then files.exists(/home/user)', ['sbx'], async () => {
    const again = await Sandbox.connect(state.id);
    eq(again.sandboxId, state.id, 'connected sandboxId');
    eq(await again.files.exists('/home/user'), true, 'exists /home/user');
    return 'true';
  });

  await step('runCode print(6*7) -> logs.stdout ["42\\n"], executionCount', ['sbx'], async () => {
    const ex = await sbx().runCode('print(6*7)');
    eq(ex.logs.stdout, ['42\n'], 'logs.stdout');
    check(typeof ex.executionCount === 'number', `executionCount: ${ex.executionCount}`);
    check(!ex.error, `error: ${JSON.stringify(ex.error)}`);
    return `executionCount=${ex.executionCount}`;
  });

  await step("runCode('1+1') -> text '2'", ['sbx'], async () => {
    const ex = await sbx().runCode('1+1');
    eq(ex.text, '2', 'text');
    return `results=${JSON.stringify(ex.results.map((r) => r.toJSON()))}`;
  });

  await step('[DISPLAY] runCode matplotlib plt.show() -> result.png', ['sbx'], async () => {
    const ex = await sbx().runCode(
      "import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; plt.plot([1,2,3]); plt.show()",
      { timeoutMs: 120_000 },
    );
    check(!ex.error, `error: ${ex.error?.name}: ${ex.error?.value}`);
    const withPng = ex.results.find((r) => r.png);
    check(withPng, `no result with png; results formats: ${JSON.stringify(ex.results.map((r) => r.formats()))}`);
    const bytes = Buffer.from(withPng.png, 'base64');
    eq([...bytes.subarray(0, 8)], PNG_SIGNATURE, 'png signature');
    return `png ${bytes.length} bytes, formats=${JSON.stringify(withPng.formats())} isMainResult=${withPng.isMainResult}`;
  });

  await step("runCode raise ValueError('boom') -> error", ['sbx'], async () => {
    const ex = await sbx().runCode("raise ValueError('boom')");
    check(ex.error, 'no error');
    eq(ex.error.name, 'ValueError', 'error.name');
    eq(ex.error.value, 'boom', 'error.value');
    check(typeof ex.error.traceback === 'string' && ex.error.traceback.length > 0, `traceback: ${ex.error.traceback}`);
    return `traceback ${ex.error.traceback.length} chars`;
  });

  await step('create envs reach code: os.environ FOO', ['sbx'], async () => {
    const ex = await sbx().runCode("import os; print(os.environ.get('FOO'))");
    eq(ex.logs.stdout.join(''), 'bar\n', 'stdout');
    return 'bar';
  });

  await step('runCode envs option (per execution)', ['sbx'], async () => {
    const ex = await sbx().runCode("import os; print(os.environ.get('BAZ'))", { envs: { BAZ: 'qux' } });
    eq(ex.logs.stdout.join(''), 'qux\n', 'stdout');
    state.perExecEnvs = true;
    return 'qux';
  });

  await step('runCode envs option does not outlive its execution', ['perExecEnvs'], async () => {
    const ex = await sbx().runCode("import os; print(os.environ.get('BAZ'))");
    eq(ex.logs.stdout.join(''), 'None\n', 'stdout after');
    return 'None';
  });

  await step("runCode {language: 'javascript'} (default JS context)", ['sbx'], async () => {
    const ex = await sbx().runCode('[1, 2, 3].map((x) => x * 2).length + 1', { language: 'javascript' });
    check(!ex.error, `error: ${ex.error?.name}: ${ex.error?.value}`);
    eq(ex.text, '4', 'text');
    return '4';
  });

  await step('createCodeContext python + javascript, state per context', ['sbx'], async () => {
    await sbx().runCode("x = 'default'");
    state.py = await sbx().createCodeContext({ language: 'python' });
    state.js = await sbx().createCodeContext({ language: 'javascript' });
    check(state.py?.id && state.js?.id && state.py.id !== state.js.id, `contexts: ${JSON.stringify([state.py, state.js])}`);
    await sbx().runCode('x = 41', { context: state.py });
    eq((await sbx().runCode('x + 1', { context: state.py })).text, '42', 'python context x + 1');
    const jsSet = await sbx().runCode('var y = 20;', { context: state.js });
    check(!jsSet.error, `js error: ${jsSet.error?.name}: ${jsSet.error?.value}`);
    eq((await sbx().runCode('y + 2', { context: state.js })).text, '22', 'javascript context y + 2');
    eq((await sbx().runCode('x')).text, "'default'", 'default context x');
    return `python=${JSON.stringify(state.py)} javascript=${JSON.stringify(state.js)}`;
  });

  await step('listCodeContexts contains both', ['py', 'js'], async () => {
    const list = await sbx().listCodeContexts();
    check(Array.isArray(list), `not an array: ${JSON.stringify(list)}`);
    const ids = list.map((c) => c.id);
    check(ids.includes(state.py.id) && ids.includes(state.js.id), `ids ${JSON.stringify(ids)}`);
    const py = list.find((c) => c.id === state.py.id);
    eq(py.language, 'python', 'listed language');
    return JSON.stringify(list).slice(0, 400);
  });

  await step('removeCodeContext', ['py', 'js'], async () => {
    await sbx().removeCodeContext(state.js);
    await sbx().removeCodeContext(state.py.id);
    const ids = (await sbx().listCodeContexts()).map((c) => c.id);
    check(!ids.includes(state.js.id) && !ids.includes(state.py.id), `still listed: ${JSON.stringify(ids)}`);
    const err = await rejection(sbx().runCode('1', { context: state.py }), 'runCode in a removed context');
    return `left ${JSON.stringify(ids)}; runCode in removed context: ${describe(err)}`;
  });

  await step('files.makeDir(/code) -> true, again -> false', ['sbx'], async () => {
    eq(await sbx().files.makeDir('/code'), true, 'first makeDir');
    eq(await sbx().files.makeDir('/code'), false, 'second makeDir');
    state.code = true;
    return 'true, false';
  });

  await step('files.write /code/a.txt then read', ['code'], async () => {
    const info = await sbx().files.write('/code/a.txt', 'hello');
    eq(info.path, '/code/a.txt', 'written path');
    eq(info.name, 'a.txt', 'written name');
    eq(await sbx().files.read('/code/a.txt'), 'hello', 'read');
    state.a = true;
    return JSON.stringify(info);
  });

  await step('files.write relative rel.txt lands in /home/user', ['sbx'], async () => {
    const info = await sbx().files.write('rel.txt', 'relative');
    const r = await sbx().commands.run('cat /home/user/rel.txt');
    eq(r.stdout, 'relative', 'cat /home/user/rel.txt');
    eq(await sbx().files.read('rel.txt'), 'relative', 'read rel.txt');
    return JSON.stringify(info);
  });

  await step('files.exists true / false', ['a'], async () => {
    eq(await sbx().files.exists('/code/a.txt'), true, 'exists a.txt');
    eq(await sbx().files.exists('/code/nope.txt'), false, 'exists nope.txt');
    return 'true, false';
  });

  await step("files.exists('/'), getInfo('/'): the root is a directory, however spelt; '..' stops at it", ['sbx'], async () => {
    eq(await sbx().files.exists('/'), true, 'exists /');
    const root = await sbx().files.getInfo('/');
    eq(root.type, 'dir', 'type of /');
    eq(root.path, '/', 'path of /');
    eq((await sbx().files.getInfo('/home/user/../../..')).path, '/', 'path of /home/user/../../..');
    eq((await sbx().files.getInfo('.')).type, 'dir', 'type of .');
    eq(await sbx().files.exists('..'), true, 'exists ..');
    const names = (await sbx().files.list('/workspace/..')).map((e) => e.name);
    check(names.includes('home') && names.includes('usr'), `list /workspace/.. ${JSON.stringify(names)}`);
    return JSON.stringify(root);
  });

  await step("files.list('/code') has a.txt as file", ['a'], async () => {
    const entries = await sbx().files.list('/code');
    const a = entries.find((e) => e.name === 'a.txt');
    check(a, `entries ${JSON.stringify(entries.map((e) => e.name))}`);
    eq(a.type, 'file', 'type');
    eq(a.path, '/code/a.txt', 'path');
    return JSON.stringify(entries.map((e) => `${e.name}:${e.type}`));
  });

  await step('files.list depth 1 vs 2 on a nested dir', ['code'], async () => {
    eq(await sbx().files.makeDir('/code/d1/d2'), true, 'makeDir /code/d1/d2');
    await sbx().files.write('/code/d1/d2/deep.txt', 'deep');
    const one = (await sbx().files.list('/code')).map((e) => e.path);
    const two = (await sbx().files.list('/code', { depth: 2 })).map((e) => e.path);
    check(one.includes('/code/d1') && !one.includes('/code/d1/d2'), `depth 1: ${JSON.stringify(one)}`);
    check(two.includes('/code/d1') && two.includes('/code/d1/d2'), `depth 2 lacks d1/d2: ${JSON.stringify(two)}`);
    check(!two.includes('/code/d1/d2/deep.txt'), `depth 2 went too deep: ${JSON.stringify(two)}`);
    const d2 = (await sbx().files.list('/code', { depth: 2 })).find((e) => e.path === '/code/d1/d2');
    eq(d2.type, 'dir', 'd2 type');
    return `depth1=${JSON.stringify(one)} depth2=${JSON.stringify(two)}`;
  });

  await step('files.getInfo(/code/a.txt) size', ['a'], async () => {
    const info = await sbx().files.getInfo('/code/a.txt');
    eq(info.size, 5, 'size');
    eq(info.type, 'file', 'type');
    eq(info.name, 'a.txt', 'name');
    return JSON.stringify(info);
  });

  await step('files.rename a.txt -> b.txt', ['a'], async () => {
    const info = await sbx().files.rename('/code/a.txt', '/code/b.txt');
    eq(info.path, '/code/b.txt', 'renamed path');
    eq(await sbx().files.exists('/code/a.txt'), false, 'a.txt after rename');
    eq(await sbx().files.read('/code/b.txt'), 'hello', 'b.txt content');
    state.b = true;
    return JSON.stringify(info);
  });

  await step('files.remove b.txt', ['b'], async () => {
    await sbx().files.remove('/code/b.txt');
    eq(await sbx().files.exists('/code/b.txt'), false, 'exists after remove');
    return 'removed';
  });

  await step('files.read of a missing file throws FileNotFoundError', ['sbx'], async () => {
    const err = await rejection(sbx().files.read('/code/missing.txt'), 'read missing');
    check(err instanceof NotFoundError, `not a NotFoundError: ${describe(err)}`);
    eq(err.name, 'FileNotFoundError', 'error name');
    return describe(err);
  });

  await step('files.write array of entries', ['code'], async () => {
    const infos = await sbx().files.write([
      { path: '/code/m1.txt', data: 'one' },
      { path: '/code/sub/m2.txt', data: 'two' },
    ]);
    check(Array.isArray(infos) && infos.length === 2, `result ${JSON.stringify(infos)}`);
    eq(infos.map((i) => i.path).sort(), ['/code/m1.txt', '/code/sub/m2.txt'], 'written paths');
    eq(await sbx().files.read('/code/m1.txt'), 'one', 'm1');
    eq(await sbx().files.read('/code/sub/m2.txt'), 'two', 'm2');
    return JSON.stringify(infos);
  });

  await step('commands.run with onStdout/onStderr', ['sbx'], async () => {
    const out = [];
    const err = [];
    const r = await sbx().commands.run('echo hi; echo err 1>&2', { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
    eq(r.exitCode, 0, 'exitCode');
    eq(r.stdout, 'hi\n', 'stdout');
    eq(r.stderr, 'err\n', 'stderr');
    eq(out.join(''), 'hi\n', 'onStdout data');
    eq(err.join(''), 'err\n', 'onStderr data');
    return `onStdout=${JSON.stringify(out)} onStderr=${JSON.stringify(err)}`;
  });

  await step("commands.run('exit 3') throws CommandExitError", ['sbx'], async () => {
    const e = await rejection(sbx().commands.run('echo partial; exit 3'), 'exit 3');
    check(e instanceof CommandExitError, `not a CommandExitError: ${describe(e)}`);
    eq(e.exitCode, 3, 'exitCode');
    eq(e.stdout, 'partial\n', 'stdout');
    return `message=${JSON.stringify(e.message)}`;
  });

  await step("commands.run('id -u', {user: 'root'}) -> 0", ['sbx'], async () => {
    let r;
    try {
      r = await sbx().commands.run('id -u', { user: 'root' });
    } catch (e) {
      throw new Error(`no root from this server: ${describe(e)}`);
    }
    eq(r.stdout, '0\n', 'id -u as root');
    return 'uid 0';
  }, { optional: true });

  await step('commands.run default cwd and HOME are /home/user', ['sbx'], async () => {
    const r = await sbx().commands.run('pwd; echo $HOME; id -un');
    const [pwd, home, user] = r.stdout.split('\n');
    eq([pwd, home], ['/home/user', '/home/user'], 'pwd and $HOME');
    return `user=${user} ${JSON.stringify(r.stdout)}`;
  });

  await step('commands.run cwd and envs options', ['code'], async () => {
    const r = await sbx().commands.run('pwd; echo "$GREETING"', { cwd: '/code', envs: { GREETING: 'hey there' } });
    eq(r.stdout, '/code\nhey there\n', 'stdout');
    return JSON.stringify(r.stdout);
  });

  await step('background cat: sendStdin, list, kill, wait', ['sbx'], async () => {
    const h = await sbx().commands.run('cat', { background: true, stdin: true });
    check(typeof h.pid === 'number' && h.pid > 0, `pid ${h.pid}`);
    await sbx().commands.sendStdin(h.pid, 'ping\n');
    await until('ping echoed on stdout', 10_000, async () => h.stdout === 'ping\n');
    const listed = await sbx().commands.list();
    const mine = listed.find((p) => p.pid === h.pid);
    check(mine, `pid ${h.pid} not in commands.list(): ${JSON.stringify(listed)}`);
    eq(await h.kill(), true, 'handle.kill()');
    let outcome;
    try {
      const r = await Promise.race([h.wait(), sleep(10_000).then(() => 'hang')]);
      check(r !== 'hang', 'wait() did not settle within 10 s of kill');
      check(r.exitCode !== 0, `wait() resolved with exitCode 0: ${JSON.stringify(r)}`);
      outcome = `resolved exitCode=${r.exitCode}`;
    } catch (e) {
      if (e.message?.startsWith('wait()')) throw e;
      outcome = `rejected ${describe(e)}`;
    }
    await until(`pid ${h.pid} gone from commands.list() after kill`, 5000,
      async () => !(await sbx().commands.list()).some((p) => p.pid === h.pid));
    eq(await sbx().commands.kill(h.pid), false, 'commands.kill of a gone pid');
    return `pid=${h.pid} listed=${JSON.stringify(mine)} wait ${outcome}`;
  });

  await step('commands.run timeoutMs 1000 on sleep 10 rejects with TimeoutError', ['sbx'], async () => {
    const t0 = Date.now();
    const e = await rejection(sbx().commands.run('sleep 10', { timeoutMs: 1000 }), 'sleep 10');
    const ms = Date.now() - t0;
    check(e instanceof TimeoutError, `not a TimeoutError: ${describe(e)}`);
    check(ms < 8000, `took ${ms} ms`);
    state.timedOut = true;
    return `${ms} ms: ${describe(e)}`;
  });

  await step('the timed-out command is gone from commands.list()', ['timedOut'], async () => {
    await until('sleep 10 gone', 5000, async () => {
      const list = await sbx().commands.list();
      return !list.some((p) => (p.args ?? []).join(' ').includes('sleep 10'));
    });
    return 'gone';
  });

  await step('pause() -> true, listed paused, pause again -> false, connect() -> its files back', ['sbx'], async () => {
    await sbx().files.write('/home/user/kept.txt', 'kept across a pause');
    eq(await sbx().pause(), true, 'pause()');
    const paused = await listAll({ query: { state: ['paused'] } });
    check(paused.items.some((s) => s.sandboxId === state.id && s.state === 'paused'), 'not listed as paused');
    const running = await listAll({ query: { state: ['running'] } });
    check(!running.items.some((s) => s.sandboxId === state.id), 'a paused sandbox listed as running');
    eq(await Sandbox.pause(state.id), false, 'a second pause');
    const back = await Sandbox.connect(state.id);
    eq(await back.files.read('/home/user/kept.txt'), 'kept across a pause', 'its file after connect()');
    const ex = await back.runCode('6 * 7');
    eq(ex.text, '42', 'runCode after the resume');
    return 'paused, listed, resumed';
  });

  await step('lifecycle {onTimeout: "pause"}: paused at its timeout, not killed; connect() brings it back',
    [], async () => {
      const auto = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } });
      try {
        await auto.files.write('/home/user/auto.txt', 'auto');
        await until('paused at its timeout', 30000, async () => {
          const listed = await listAll({ query: { state: ['paused'] } });
          return listed.items.some((s) => s.sandboxId === auto.sandboxId);
        });
        const back = await Sandbox.connect(auto.sandboxId, { timeoutMs: 60000 });
        eq(await back.files.read('/home/user/auto.txt'), 'auto', 'its file after connect()');
        return 'paused, then back';
      } finally {
        await Sandbox.kill(auto.sandboxId);
      }
    });

  await step('lifecycle {onTimeout: "pause", autoResume: true}: paused at its timeout, then resumed by runCode and'
    + ' commands.run; without autoResume the same traffic is refused until connect()', [], async () => {
      const auto = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause', autoResume: true } });
      const plain = await Sandbox.create({ timeoutMs: 2000, lifecycle: { onTimeout: 'pause' } });
      try {
        eq((await auto.getInfo()).lifecycle, { onTimeout: 'pause', autoResume: true }, 'getInfo().lifecycle');
        await auto.files.write('/home/user/resumed.txt', 'kept');
        await until('both paused at their timeout', 30000, async () => {
          const listed = await listAll({ query: { state: ['paused'] } });
          return [auto, plain].every((s) => listed.items.some((i) => i.sandboxId === s.sandboxId));
        });
        const ex = await auto.runCode('open("/home/user/resumed.txt").read()');
        eq(ex.text, "'kept'", 'runCode on the paused sandbox');
        eq((await auto.commands.run('cat /home/user/resumed.txt')).stdout, 'kept', 'commands.run after it');
        let refused;
        try {
          await plain.runCode('1');
        } catch (e) {
          refused = e;
        }
        check(refused instanceof TimeoutError, `runCode on a paused sandbox without autoResume: ${describe(refused)}`);
        const back = await Sandbox.connect(plain.sandboxId, { timeoutMs: 60000 });
        eq((await back.runCode('1 + 1')).text, '2', 'runCode after connect()');
        return 'resumed by traffic; the other refused, then connected';
      } finally {
        await Sandbox.kill(auto.sandboxId);
        await Sandbox.kill(plain.sandboxId);
      }
    });

  await step('kill() -> true', ['sbx'], async () => {
    eq(await sbx().kill(), true, 'kill()');
    state.killed = true;
    return 'true';
  });

  await step('Sandbox.kill(id) again -> false', ['killed'], async () => {
    eq(await Sandbox.kill(state.id), false, 'second kill');
    return 'false';
  });

  await step('isRunning after kill -> false', ['killed'], async () => {
    eq(await sbx().isRunning(), false, 'isRunning');
    return 'false';
  });

  await step('Sandbox.connect(killed id) throws NotFound', ['killed'], async () => {
    const e = await rejection(Sandbox.connect(state.id), 'connect to killed');
    check(e instanceof NotFoundError, `not a NotFoundError: ${describe(e)}`);
    return describe(e);
  });

  await step('Sandbox.getInfo(killed id) throws NotFound', ['killed'], async () => {
    const e = await rejection(Sandbox.getInfo(state.id), 'getInfo of killed');
    check(e instanceof NotFoundError, `not a NotFoundError: ${describe(e)}`);
    return describe(e);
  });
}

/** The seed reward function's flow (reward-kit e2b_code_execution_reward), with the base `e2b` Sandbox. */
async function scenarioReward() {
  await step('reward: Sandbox.create (e2b base template)', [], async () => {
    state.sbx = await BaseSandbox.create({ timeoutMs: 60_000 });
    state.id = state.sbx.sandboxId;
    return `sandboxId=${state.id}`;
  });
  await step("reward: files.makeDir('/code')", ['sbx'], async () => {
    const created = await state.sbx.files.makeDir('/code');
    return `created=${created}`;
  });
  await step('reward: files.write /code/script.py', ['sbx'], async () => {
    const info = await state.sbx.files.write('/code/script.py', 'print(sum(range(10)))');
    eq(info.path, '/code/script.py', 'path');
    state.written = true;
    return JSON.stringify(info);
  });
  await step('reward: commands.run python3 /code/script.py', ['written'], async () => {
    const out = [];
    const err = [];
    const r = await state.sbx.commands.run('python3 /code/script.py', {
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
      timeoutMs: 30_000,
    });
    eq(r.exitCode, 0, 'exitCode');
    eq(r.stdout, '45\n', 'stdout');
    eq(out.join(''), '45\n', 'onStdout');
    eq(err.join(''), '', 'onStderr');
    return '45';
  });
  await step('reward: kill', ['sbx'], async () => {
    eq(await state.sbx.kill(), true, 'kill()');
    state.killed = true;
    return 'true';
  });
}

/**
 * A burst (issue 50): E2B_BURST (default 30) Sandbox.create + commands.run at once, as a training loop fires them. The
 * SDK is left as it is: on a 429 with Retry-After it waits and asks again (up to 3 times within its request timeout),
 * so every create ends in a sandbox, never in an error, though the server makes one at a time.
 */
async function scenarioBurst() {
  const n = Number(process.env.E2B_BURST ?? 30);
  const started = Date.now();
  const outcomes = await Promise.all(Array.from({ length: n }, async (_, i) => {
    try {
      const sbx = await BaseSandbox.create({ timeoutMs: 120_000 });
      try {
        const r = await sbx.commands.run(`echo burst-${i}`);
        return r.stdout === `burst-${i}\n` ? 'ok' : `stdout ${JSON.stringify(r.stdout)}`;
      } finally {
        await sbx.kill();
      }
    } catch (e) {
      return describe(e);
    }
  }));
  const failures = outcomes.filter((o) => o !== 'ok');
  report(`burst: ${n} creates and commands at once`, failures.length === 0,
    failures.length === 0 ? `all ${n} in ${Date.now() - started} ms` : `${failures.length} failed: ${failures.slice(0, 5).join(' | ')}`);
  const left = await listAll({});
  report('burst: nothing left', left.items.length === 0, `${left.items.length} sandboxes listed`);
}

/**
 * Two replicas (E2B_API_URL is one, E2B_OTHER_URL the other): a sandbox made on the first is driven through the
 * second, as a balancer that picks the other replica would send it: connect, code, commands, files, timeout and kill
 * all reach the replica that holds it.
 */
async function scenarioReplicas() {
  const other = { apiUrl: process.env.E2B_OTHER_URL, sandboxUrl: process.env.E2B_OTHER_URL };
  check(other.apiUrl, 'E2B_OTHER_URL is required');
  await step('replicas: create on the first', [], async () => {
    state.sbx = await Sandbox.create({ timeoutMs: 300_000 });
    const made = await state.sbx.runCode('x = 41');
    check(!made.error, `runCode: ${JSON.stringify(made.error)}`);
    return state.sbx.sandboxId;
  });
  await step('replicas: connect through the other', ['sbx'], async () => {
    state.there = await Sandbox.connect(state.sbx.sandboxId, other);
    return state.there.sandboxId;
  });
  await step('replicas: code through the other keeps the first one\'s variables', ['there'], async () => {
    const r = await state.there.runCode('x + 1');
    eq(r.text, '42', 'x + 1');
    return r.text;
  });
  await step('replicas: a command streamed through the other', ['there'], async () => {
    const lines = [];
    const r = await state.there.commands.run('for i in 1 2 3; do echo line$i; done', { onStdout: (l) => lines.push(l) });
    eq(r.exitCode, 0, 'exit code');
    eq(r.stdout, 'line1\nline2\nline3\n', 'stdout');
    check(lines.join('').includes('line3'), `streamed: ${JSON.stringify(lines)}`);
    return `${lines.length} chunks`;
  });
  await step('replicas: a file written through the other is read on the first', ['there'], async () => {
    await state.there.files.write('/home/user/through.txt', 'written on the other');
    eq(await state.sbx.files.read('/home/user/through.txt'), 'written on the other', 'read back');
    return 'ok';
  });
  await step('replicas: info and timeout through the other', ['there'], async () => {
    await state.there.setTimeout(240_000);
    const info = await Sandbox.getInfo(state.sbx.sandboxId, other);
    eq(info.sandboxId, state.sbx.sandboxId, 'sandboxId');
    return info.templateId;
  });
  await step('replicas: killed through the other', ['there'], async () => {
    eq(await Sandbox.kill(state.sbx.sandboxId, other), true, 'kill');
    state.killed = true;
    const left = await listAll({});
    check(!left.items.some((s) => s.sandboxId === state.sbx.sandboxId), 'still listed on the first');
    return 'gone';
  });
}

/**
 * Templates (issue 52): the SDK's Template builder built by Crucible (E2B_TEMPLATE_BASE: an image of the server's
 * store), its COPY context uploaded to the URL Crucible gives, its logs read by offset; the alias resolved, a sandbox
 * made from it shows the built files and env; a second build finds its upload cached; a failing RUN is a BuildError
 * naming its step, and leaves nothing under its alias.
 */
async function scenarioTemplate() {
  const base = process.env.E2B_TEMPLATE_BASE;
  check(base, 'E2B_TEMPLATE_BASE is required');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'e2b-template-'));
  fs.mkdirSync(path.join(dir, 'app', 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'app', 'hello.txt'), 'hello from the context\n');
  fs.writeFileSync(path.join(dir, 'app', 'sub', 'run.sh'), '#!/bin/sh\necho script ran\n', { mode: 0o755 });
  const alias = `crucible-test-${process.pid}`;
  const template = () => Template({ fileContextPath: dir })
    .fromImage(base)
    .runCmd('mkdir -p /opt/built && echo ran > /opt/built/run.txt')
    .copy('app', '/opt/app')
    .setEnvs({ GREETING: 'hello env' })
    .setWorkdir('/opt/app')
    .runCmd('./sub/run.sh > made-here.txt');
  await step('template: built from the builder', [], async () => {
    const logs = [];
    const info = await Template.build(template(), alias, { onBuildLogs: (e) => logs.push(e.message) });
    check(logs.some((l) => l.includes("Uploaded 'app'")), `no upload in the logs: ${JSON.stringify(logs)}`);
    check(logs.some((l) => l.includes('COPY app /opt/app')), `no COPY step in the logs: ${JSON.stringify(logs)}`);
    state.built = info;
    return `${info.templateId} ${info.buildId}, ${logs.length} log lines`;
  });
  await step('template: its alias exists, an unknown one does not', ['built'], async () => {
    eq(await Template.exists(alias), true, 'exists(alias)');
    eq(await Template.exists(`${alias}-never`), false, 'exists(unknown)');
    return 'ok';
  });
  await step('template: a sandbox from the alias has the built files and env', ['built'], async () => {
    const sbx = await BaseSandbox.create(alias, { timeoutMs: 120_000 });
    try {
      const r = await sbx.commands.run('cat /opt/built/run.txt /opt/app/hello.txt /opt/app/made-here.txt; echo $GREETING');
      eq(r.stdout, 'ran\nhello from the context\nscript ran\nhello env\n', 'stdout');
      return sbx.sandboxId;
    } finally {
      await sbx.kill();
    }
  });
  await step('template: a second build is a cache hit, its upload too', ['built'], async () => {
    const logs = [];
    const again = await Template.build(template(), alias, { onBuildLogs: (e) => logs.push(e.message) });
    check(logs.some((l) => l.includes("Skipping upload of 'app', already cached")), JSON.stringify(logs));
    check(logs.some((l) => l.startsWith('CACHED')), `not a cache hit: ${JSON.stringify(logs)}`);
    eq(again.templateId, state.built.templateId, 'the same template');
    const sbx = await BaseSandbox.create(alias, { timeoutMs: 120_000 });
    try {
      eq((await sbx.commands.run('cat /opt/app/made-here.txt')).stdout, 'script ran\n', 'the cached image');
    } finally {
      await sbx.kill();
    }
    return again.buildId;
  });
  await step('template: built from a Dockerfile', [], async () => {
    const df = `${alias}-df`;
    const t = Template({ fileContextPath: dir }).fromDockerfile([
      `FROM ${base}`, 'ENV MODE=dockerfile', 'WORKDIR /opt/df', 'COPY app/hello.txt ./hello.txt',
      'RUN echo "built in $(pwd) as $MODE" > made.txt', 'CMD ["sleep", "infinity"]'].join('\n'));
    await Template.build(t, df);
    const sbx = await BaseSandbox.create(df, { timeoutMs: 120_000 });
    try {
      const r = await sbx.commands.run('cat /opt/df/made.txt /opt/df/hello.txt; echo $MODE');
      eq(r.stdout, 'built in /opt/df as dockerfile\nhello from the context\ndockerfile\n', 'stdout');
      return sbx.sandboxId;
    } finally {
      await sbx.kill();
    }
  });
  await step('template: a failing RUN is a BuildError naming its step, and nothing is under its alias', [], async () => {
    const bad = `${alias}-bad`;
    let error;
    try {
      await Template.build(Template().fromImage(base).runCmd('echo first').runCmd('echo doomed >&2; exit 3'), bad);
    } catch (e) {
      error = e;
    }
    check(error && error.name === 'BuildError', `no BuildError: ${describe(error)}`);
    check(error.message.includes('step 2') && error.message.includes('exit code 3')
      && error.message.includes('doomed'), error.message);
    eq(await Template.exists(bad), false, 'exists(bad)');
    return error.message;
  });
  fs.rmSync(dir, { recursive: true, force: true });
}

const scenario = process.argv[2] ?? 'all';
const scenarios = {
  all: scenarioAll, reward: scenarioReward, burst: scenarioBurst, replicas: scenarioReplicas, template: scenarioTemplate,
};
if (!scenarios[scenario]) {
  console.error(`usage: node e2b.mjs [${Object.keys(scenarios).join('|')}]`);
  process.exit(2);
}
try {
  await scenarios[scenario]();
} catch (e) {
  report('scenario', false, `crashed: ${describe(e)}`);
} finally {
  if (state.sbx && !state.killed) await state.sbx.kill().catch(() => {});
}
console.log(JSON.stringify({ passed, failed, optional_failed: optionalFailed }));
process.exit(failed === 0 ? 0 : 1);
