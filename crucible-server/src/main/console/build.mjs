// Type-checks the console (tsc --noEmit: src/ and the TypeScript SDK's sources it imports), then bundles it with esbuild
// into the server's resources beside its page (index.html, kept there as it is), where the JAR carries them: console.js
// (src/main.ts with the SDK, CodeMirror and xterm.js) and console.css (src/styles with xterm.js's sheet). Nothing is
// fetched at run time. Run after changing src/: npm run build (ConsoleBrowserTest fails on a stale bundle or a type error).

import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { build } from "esbuild";

const here = new URL(".", import.meta.url).pathname;
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  console.error(
    "typescript is not installed here: run npm ci in crucible-server/src/main/console (its lock file pins it)",
  );
  process.exit(1);
}
try {
  execFileSync(process.execPath, [tsc, "--noEmit", "-p", "tsconfig.json"], { cwd: here, stdio: "inherit" });
} catch {
  console.error("the console does not type-check (the errors above): nothing was bundled");
  process.exit(1);
}

const out = process.env.CONSOLE_OUT ?? new URL("../resources/dev/crucible/server/ui/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
await build({
  absWorkingDir: here,
  entryPoints: { console: "src/main.ts" },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  legalComments: "eof",
  outdir: out,
  logLevel: "warning",
});
