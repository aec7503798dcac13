// The server the tests run against: CRUCIBLE_URL and CRUCIBLE_TOKEN, set by the Java test that starts it
// (TypeScriptSdkTest). A run without them is refused rather than skipped: there is nothing to test without a server.
import assert from "node:assert/strict";
import { Crucible } from "../dist/index.js";

export const url = process.env.CRUCIBLE_URL;
export const token = process.env.CRUCIBLE_TOKEN;
assert.ok(url, "CRUCIBLE_URL names the server these tests run against (TypeScriptSdkTest starts one)");

export function crucible(options = {}) {
  return new Crucible({ baseUrl: url, token, ...options });
}

/** Waits until `check` holds, polling; fails after `ms`. */
export async function until(check, ms = 30_000, what = "the condition") {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    assert.ok(Date.now() < end, `${what} did not hold within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
