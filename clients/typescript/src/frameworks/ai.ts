/**
 * Crucible's tools for the Vercel AI SDK (`ai`, 6+): `generateText({ model, tools: await crucibleTools(crucible) })`.
 * Each is the server's own tool definition; a call runs through `POST /v1/tools/call`, and what it gives the model
 * keeps its images (a matplotlib figure reaches a vision model as an image).
 */
import { dynamicTool, jsonSchema } from "ai";
import type { Crucible } from "../client.js";
import { type ToolsOptions, toolDefinitions } from "../tools.js";
import type { ToolOutcome } from "../types.js";

export type { ToolsOptions } from "../tools.js";

/** The tools by name, for `tools:` of `generateText` or `streamText`. */
export async function crucibleTools(
  crucible: Crucible,
  options?: ToolsOptions,
): Promise<Record<string, ReturnType<typeof dynamicTool>>> {
  const definitions = await toolDefinitions(crucible, options);
  return Object.fromEntries(
    definitions.map((d) => [
      d.name,
      dynamicTool({
        description: d.description,
        inputSchema: jsonSchema(d.parameters as Parameters<typeof jsonSchema>[0]),
        execute: (input, { abortSignal }) => d.call(input as Record<string, unknown>, { signal: abortSignal }),
        toModelOutput: ({ output }) => modelOutput(output as ToolOutcome),
      }),
    ]),
  );
}

/** An outcome as the model reads it: its text, and its images as files. */
function modelOutput(outcome: ToolOutcome) {
  return {
    type: "content" as const,
    value: outcome.content.map((c) =>
      c.type === "text"
        ? { type: "text" as const, text: c.text }
        : { type: "file-data" as const, data: c.data, mediaType: c.mime_type },
    ),
  };
}
