// The OpenAI Agents SDK's runner (run(agent, input)) driven offline by its ScriptedModel from
// @openai/agents-core/testing: the model calls a Crucible tool that runs a session cell drawing a figure, and the
// model's next call receives the function call's output with the figure as an image.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, run, setTracingDisabled } from "@openai/agents";
import { assistantMessage, functionCall, ScriptedModel } from "@openai/agents-core/testing";
import { crucibleTools } from "../dist/frameworks/openai-agents.js";
import { crucible } from "./env.mjs";
import { PLOT_CELL } from "./plot.mjs";

setTracingDisabled(true);

test("an OpenAI Agents run calls a Crucible tool in a session and the model sees text and image", async () => {
  const model = new ScriptedModel([
    [functionCall("run_in_session", { code: PLOT_CELL }, { callId: "call_1" })],
    [assistantMessage("The answer is 42.")],
  ]);
  const agent = new Agent({
    name: "coder",
    instructions: "Run code to answer.",
    model,
    tools: await crucibleTools(crucible(), { set: "session" }),
  });
  const result = await run(agent, "Plot y = x^2 and compute 6 * 7.");
  assert.equal(result.finalOutput, "The answer is 42.");
  model.assertComplete();
  const input = model.calls[1].request.input;
  const output = input.find((item) => item.type === "function_call_result").output;
  const parts = Array.isArray(output) ? output : [output];
  assert.ok(
    parts.some((p) => (p.type === "input_text" || p.type === "text") && p.text.includes("42")),
    JSON.stringify(output).slice(0, 400),
  );
  assert.ok(
    parts.some((p) => p.type === "input_image" || p.type === "image"),
    "the figure reached the model",
  );
});
