// LangChain.js's tool-calling loop (bindTools, invoke, a ToolMessage per tool call from tool.invoke) driven offline by
// a scripted chat model built on @langchain/core's BaseChatModel (its own fakes answer text or one fixed message, not a
// sequence of tool calls): the model asks for a session cell that draws a figure, Crucible runs it in a real session,
// and the model's next call receives the ToolMessage with the figure as an image block.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { crucibleTools } from "../dist/frameworks/langchain.js";
import { crucible } from "./env.mjs";
import { PLOT_CELL } from "./plot.mjs";

class ScriptedChatModel extends BaseChatModel {
  constructor(responses) {
    super({});
    this.responses = responses;
    this.seen = [];
  }

  _llmType() {
    return "scripted";
  }

  bindTools(tools) {
    this.bound = tools;
    return this;
  }

  async _generate(messages) {
    this.seen.push(messages);
    const message = this.responses.shift();
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }
}

test("a LangChain tool-calling loop runs the model's call in a Crucible session, image included", async () => {
  const tools = await crucibleTools(crucible(), { set: "session" });
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const scripted = new ScriptedChatModel([
    new AIMessage({
      content: "",
      tool_calls: [{ id: "call_1", name: "run_in_session", args: { code: PLOT_CELL }, type: "tool_call" }],
    }),
    new AIMessage("The answer is 42."),
  ]);
  const model = scripted.bindTools(tools);
  assert.equal(scripted.bound.length, tools.length);
  const messages = [new HumanMessage("Plot y = x^2 and compute 6 * 7.")];
  for (let turn = 0; turn < 4; turn++) {
    const reply = await model.invoke(messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) break;
    for (const call of reply.tool_calls) {
      messages.push(await byName[call.name].invoke(call));
    }
  }
  assert.equal(messages.at(-1).content, "The answer is 42.");
  const toolMessage = scripted.seen[1].find((m) => m.getType() === "tool");
  assert.ok(toolMessage, "the model's second call received the tool's message");
  assert.equal(toolMessage.tool_call_id, "call_1");
  assert.ok(toolMessage.content.some((b) => b.type === "text" && b.text.includes("42")));
  const image = toolMessage.content.find((b) => b.type === "image_url");
  assert.match(image.image_url.url, /^data:image\/png;base64,iVBOR/);
  assert.equal(toolMessage.artifact.is_error, false);
});
