/**
 * Crucible's tools for the OpenAI Agents SDK (`@openai/agents`): `new Agent({ tools: await crucibleTools(crucible) })`.
 * Each is the server's own tool definition (its JSON Schema, not strict); a call's output is its text and images.
 */
import { tool } from "@openai/agents";
import type { Crucible } from "../client.js";
import { type ToolsOptions, toolDefinitions } from "../tools.js";
import type { ToolOutcome } from "../types.js";

export type { ToolsOptions } from "../tools.js";

/** The tools, for `tools:` of an `Agent`. */
export async function crucibleTools(crucible: Crucible, options?: ToolsOptions) {
  const definitions = await toolDefinitions(crucible, options);
  return definitions.map((d) =>
    tool({
      name: d.name,
      description: d.description,
      parameters: { ...d.parameters, additionalProperties: true } as never,
      strict: false,
      execute: async (input: unknown) => output(await d.call(input as Record<string, unknown>)),
    }),
  );
}

/** An outcome as the agent's tool output: its text (marked when the call failed), and its images. */
function output(outcome: ToolOutcome) {
  return outcome.content.map((c) =>
    c.type === "text"
      ? { type: "text" as const, text: outcome.is_error ? `Error: ${c.text}` : c.text }
      : { type: "image" as const, image: { data: c.data, mediaType: c.mime_type } },
  );
}
