// The Vercel AI SDK's own agent loop (generateText with stopWhen) driven offline by its MockLanguageModelV3 from
// ai/test: the model asks for a session cell that draws a figure, Crucible runs it in a real session, and the model's
// next call receives the result with the figure as an image.
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { crucibleTools } from "../dist/frameworks/ai.js";
import { crucible } from "./env.mjs";
import { PLOT_CELL } from "./plot.mjs";

const usage = () => ({
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
});

test("an AI SDK agent loop runs the model's tool call in a Crucible session and hands back text and image", async () => {
  const tools = await crucibleTools(crucible(), { set: "session" });
  assert.ok(tools.run_in_session, "the server's session tools, by name");
  const model = new MockLanguageModelV3({
    doGenerate: [
      {
        content: [
          {
            type: "tool-call",
            toolCallId: "call-1",
            toolName: "run_in_session",
            input: JSON.stringify({ code: PLOT_CELL }),
          },
        ],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage: usage(),
        warnings: [],
      },
      {
        content: [{ type: "text", text: "The answer is 42." }],
        finishReason: { unified: "stop", raw: undefined },
        usage: usage(),
        warnings: [],
      },
    ],
  });
  const result = await generateText({
    model,
    tools,
    prompt: "Plot y = x^2 and compute 6 * 7.",
    stopWhen: stepCountIs(4),
  });
  assert.equal(result.text, "The answer is 42.");
  assert.equal(model.doGenerateCalls.length, 2);
  const toolMessage = model.doGenerateCalls[1].prompt.find((m) => m.role === "tool");
  const output = toolMessage.content.find((p) => p.type === "tool-result").output;
  assert.equal(output.type, "content");
  assert.ok(
    output.value.some((v) => v.type === "text" && v.text.includes("42")),
    JSON.stringify(output).slice(0, 400),
  );
  const image = output.value.find((v) => v.type === "file-data");
  assert.ok(image, "the figure reached the model");
  assert.equal(image.mediaType, "image/png");
  assert.equal(Buffer.from(image.data, "base64").subarray(1, 4).toString(), "PNG");
});
