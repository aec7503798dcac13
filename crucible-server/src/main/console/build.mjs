// Bundles the console's script (src/console.js with CodeMirror and xterm.js) and xterm.js's style sheet into the server's resources, beside its page and style
// sheet (index.html and console.css, kept there as they are), where the JAR carries them:
// nothing is fetched at run time. Run after changing src/: npm run build (ConsoleBundleTest fails on a stale bundle).
import { build } from "esbuild";
import { mkdirSync } from "node:fs";

const out = process.env.CONSOLE_OUT ?? new URL("../resources/dev/crucible/server/ui/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
await build({
  entryPoints: ["src/console.js"],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  legalComments: "eof",
  outfile: out + "console.js",
});
await build({ entryPoints: ["node_modules/@xterm/xterm/css/xterm.css"], bundle: true, minify: true, outfile: out + "xterm.css" });
