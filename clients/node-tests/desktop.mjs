// E2B's Desktop SDK from npm (@e2b/desktop), unmodified, against Crucible's E2B-compatible API and its `desktop`
// template. Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY (the SDK reads them itself). Prints one JSON line per step,
// {"step", "ok", "detail"}, then {"passed", "failed", "optional_failed"}; exits 0 only when failed == 0.
import { Sandbox } from '@e2b/desktop';
import { Sandbox as BaseSandbox } from 'e2b';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { inflateSync } from 'node:zlib';

const STEP_TIMEOUT_MS = 120_000;
const WIDTH = 800;
const HEIGHT = 600;
const state = {};
let passed = 0;
let failed = 0;

function report(step, ok, detail) {
  console.log(JSON.stringify({ step, ok, detail: String(detail ?? '').slice(0, 800) }));
  if (ok) passed++;
  else failed++;
}

async function step(name, needs, fn) {
  const missing = needs.filter((n) => state[n] === undefined);
  if (missing.length > 0) {
    report(name, false, `not run: needs ${missing.join(', ')} (an earlier step failed)`);
    return;
  }
  let timer;
  try {
    const detail = await Promise.race([fn(), new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`step timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
    })]);
    report(name, true, detail);
  } catch (e) {
    const extra = e?.exitCode !== undefined ? ` exitCode=${e.exitCode} stderr=${JSON.stringify(e.stderr)}` : '';
    report(name, false, `${e?.name}: ${e?.message}${extra}`);
  } finally {
    clearTimeout(timer);
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

/** Polls fn until it returns a truthy value (its value), or throws with the last value after `ms`. */
async function until(fn, what, ms = 60_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what}: not so within ${ms} ms (last: ${JSON.stringify(last)?.slice(0, 200)})`);
}

/** Decodes an 8-bit RGB or RGBA PNG (what scrot writes) into {width, height, pixel(x, y) -> [r, g, b]}. */
function decodePng(bytes) {
  const buf = Buffer.from(bytes);
  check(buf.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat = [];
  for (let at = 8; at < buf.length;) {
    const length = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      check(data[8] === 8 && (data[9] === 2 || data[9] === 6) && data[12] === 0, `unexpected PNG format ${data.toString('hex')}`);
      channels = data[9] === 2 ? 3 : 4;
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[y * stride + i - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + i] : 0;
      const c = i >= channels && y > 0 ? out[(y - 1) * stride + i - channels] : 0;
      let v = line[i];
      if (filter === 1) v += a;
      else if (filter === 2) v += b;
      else if (filter === 3) v += (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + i] = v & 0xff;
    }
  }
  return { width, height, pixel: (x, y) => [...out.subarray(y * stride + x * channels, y * stride + x * channels + 3)] };
}

/** The bounding box of the pure red pixels of a screenshot, or null. */
function redBox(png) {
  let box = null;
  for (let y = 0; y < png.height; y++) {
    for (let x = 0; x < png.width; x++) {
      const [r, g, b] = png.pixel(x, y);
      if (r === 255 && g === 0 && b === 0) {
        box = box ?? { x0: x, y0: y, x1: x, y1: y };
        box.x0 = Math.min(box.x0, x); box.y0 = Math.min(box.y0, y);
        box.x1 = Math.max(box.x1, x); box.y1 = Math.max(box.y1, y);
      }
    }
  }
  return box;
}

/** Whether a TCP or unix connection to `target` is refused (true) or made (false). */
function refused(target) {
  return new Promise((resolve) => {
    const socket = net.connect(target);
    socket.on('connect', () => { socket.destroy(); resolve(false); });
    socket.on('error', () => resolve(true));
  });
}

const sbx = () => state.sandbox;

async function main() {
  await step('create: Sandbox.create() starts Xvfb and XFCE in the desktop template', [], async () => {
    state.sandbox = await Sandbox.create({ resolution: [WIDTH, HEIGHT], dpi: 96, timeoutMs: 600_000 });
    return state.sandbox.sandboxId;
  });
  await step('getScreenSize() is the resolution asked for', ['sandbox'], async () => {
    const size = await sbx().getScreenSize();
    check(size.width === WIDTH && size.height === HEIGHT, `got ${JSON.stringify(size)}`);
    state.size = size;
    return JSON.stringify(size);
  });
  await step('screenshot(): a PNG of the screen, the desktop drawn', ['sandbox'], async () => {
    const bytes = await sbx().screenshot();
    const png = decodePng(bytes);
    check(png.width === WIDTH && png.height === HEIGHT, `${png.width}x${png.height}`);
    const colours = new Set();
    for (let y = 0; y < HEIGHT; y += 7) for (let x = 0; x < WIDTH; x += 7) colours.add(png.pixel(x, y).join(','));
    check(colours.size >= 2, `one colour only (${[...colours]}): nothing drawn`);
    state.screenshot = png;
    return `${png.width}x${png.height}, ${colours.size} colours sampled`;
  });
  await step('a red xterm appears in a screenshot (polled), found by its pixels', ['screenshot'], async () => {
    await sbx().commands.run('xterm -bg "#ff0000" -fg "#ff0000" -geometry 40x12+150+120', { background: true, timeoutMs: 0 });
    const box = await until(async () => {
      const found = redBox(decodePng(await sbx().screenshot()));
      return found && found.x1 - found.x0 > 100 && found.y1 - found.y0 > 60 ? found : null;
    }, 'a red window');
    if (process.env.DESKTOP_SCREENSHOT) writeFileSync(process.env.DESKTOP_SCREENSHOT, await sbx().screenshot());
    state.red = box;
    return JSON.stringify(box);
  });
  await step('moveMouse() and getCursorPosition()', ['red'], async () => {
    const x = (state.red.x0 + state.red.x1) >> 1;
    const y = (state.red.y0 + state.red.y1) >> 1;
    await sbx().moveMouse(x, y);
    const at = await sbx().getCursorPosition();
    check(at.x === x && at.y === y, `cursor at ${JSON.stringify(at)}, moved to ${x},${y}`);
    return JSON.stringify(at);
  });
  await step('leftClick() on the window, write() and press("enter") type a command into it', ['red'], async () => {
    await sbx().leftClick((state.red.x0 + state.red.x1) >> 1, (state.red.y0 + state.red.y1) >> 1);
    await sbx().write('echo typed-$((6*7)) > /tmp/typed.txt', { chunkSize: 50, delayInMs: 5 });
    await sbx().press('enter');
    const text = await until(async () => {
      try { return await sbx().files.read('/tmp/typed.txt'); } catch { return null; }
    }, 'the typed command ran');
    check(text.trim() === 'typed-42', `the file holds ${JSON.stringify(text)}`);
    return text.trim();
  });
  await step('press() a chord and scroll() both ways', ['red'], async () => {
    await sbx().press(['ctrl', 'l']);
    await sbx().scroll('up', 3);
    await sbx().scroll('down', 2);
    await sbx().doubleClick();
    await sbx().rightClick();
    return 'ok';
  });
  await step('drag() from one point to another', ['red'], async () => {
    await sbx().drag([300, 300], [320, 330]);
    const at = await sbx().getCursorPosition();
    check(at.x === 320 && at.y === 330, `cursor at ${JSON.stringify(at)}`);
    return JSON.stringify(at);
  });
  await step("launch('xterm') through its desktop entry opens a window", ['sandbox'], async () => {
    const before = await sbx().getApplicationWindows('xterm').catch(() => ['']);
    await sbx().launch('xterm');
    const windows = await until(async () => {
      const now = await sbx().getApplicationWindows('xterm').catch(() => ['']);
      return now.filter((w) => w).length > before.filter((w) => w).length ? now : null;
    }, 'a second xterm window');
    return `${windows.length} xterm windows`;
  });
  await step('open() a file runs xdg-open in the sandbox', ['sandbox'], async () => {
    await sbx().files.write('/home/user/opened.txt', 'hello');
    await sbx().open('/home/user/opened.txt');
    return 'ok';
  });
  await step('stream.start(): x11vnc and noVNC listen in the sandbox; getUrl() names port 6080', ['sandbox'], async () => {
    await sbx().stream.start();
    const url = sbx().stream.getUrl({ viewOnly: true });
    check(url.includes('6080-') && url.includes('/vnc.html') && url.includes('view_only=true'), url);
    state.stream = url;
    return url;
  });
  await step('noVNC is served through the authenticated ports proxy', ['stream'], async () => {
    const base = process.env.E2B_API_URL;
    const page = `${base}/v1/sessions/${sbx().sandboxId}/ports/6080/vnc.html`;
    const anonymous = await fetch(page);
    check(anonymous.status === 401, `without a key: ${anonymous.status}`);
    const res = await fetch(page, { headers: { Authorization: `Bearer ${process.env.E2B_API_KEY}` } });
    const body = await res.text();
    check(res.status === 200 && body.includes('noVNC'), `${res.status}: ${body.slice(0, 200)}`);
    return `${res.status}, ${body.length} bytes`;
  });
  await step('hostile: the display and VNC are not on the host: loopback 5900/6080 and the X socket refused', ['stream'], async () => {
    for (const target of [{ host: '127.0.0.1', port: 5900 }, { host: '127.0.0.1', port: 6080 },
      { path: '\0/tmp/.X11-unix/X0' }, { path: '/tmp/.X11-unix/X0' }]) {
      check(await refused(target), `${JSON.stringify(target)} accepted a connection from the host`);
    }
    return 'refused';
  });
  await step('hostile: another sandbox sees no display and no VNC', ['stream'], async () => {
    const other = await BaseSandbox.create('base');
    try {
      const probe = await other.commands.run(
        "xdpyinfo -display :0 >/dev/null 2>&1 && echo display; (echo > /dev/tcp/127.0.0.1/5900) 2>/dev/null && echo vnc;"
        + " (echo > /dev/tcp/127.0.0.1/6080) 2>/dev/null && echo novnc; echo done", { timeoutMs: 30_000 });
      check(probe.stdout.trim() === 'done', `another sandbox reached: ${probe.stdout}`);
      return 'nothing reached';
    } finally {
      await other.kill();
    }
  });
  await step('stream.stop() and kill()', ['sandbox'], async () => {
    await sbx().stream.stop();
    await sbx().kill();
    return 'killed';
  });
}

try {
  await main();
} catch (e) {
  report('scenario', false, `crashed: ${e?.stack ?? e}`);
}
console.log(JSON.stringify({ passed, failed, optional_failed: 0 }));
process.exit(failed === 0 ? 0 : 1);
