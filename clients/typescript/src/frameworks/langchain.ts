/**
 * Crucible's tools for LangChain.js (`@langchain/core`): `model.bindTools(await crucibleTools(crucible))`, then each
 * tool call of the model's answer through `tool.invoke(call)`, which gives the `ToolMessage` to send back. Each is the
 * server's own tool definition (its JSON Schema); the message's content keeps the outcome's images (as `image_url`
 * blocks), and its artifact is the whole outcome.
 */
import { tool } from "@langchain/core/tools";
import type { Crucible } from "../client.js";
import { type ToolsOptions, toolDefinitions } from "../tools.js";
import type { ToolOutcome } from "../types.js";

export type { ToolsOptions } from "../tools.js";

/** The tools, for `bindTools` and a tool node. */
export async function crucibleTools(crucible: Crucible, options?: ToolsOptions) {
  const definitions = await toolDefinitions(crucible, options);
  return definitions.map((d) =>
    tool(
      async (input: Record<string, unknown>, config?: { signal?: AbortSignal }) => {
        const outcome = await d.call(input, { signal: config?.signal });
        return [content(outcome), outcome] as [ReturnType<typeof content>, ToolOutcome];
      },
      {
        name: d.name,
        description: d.description,
        schema: d.parameters as Record<string, unknown>,
        responseFormat: "content_and_artifact",
      },
    ),
  );
}

/** An outcome as message content: its text (marked when the call failed) and its images. */
function content(outcome: ToolOutcome) {
  return outcome.content.map((c) =>
    c.type === "text"
      ? { type: "text" as const, text: outcome.is_error ? `Error: ${c.text}` : c.text }
      : { type: "image_url" as const, image_url: { url: `data:${c.mime_type};base64,${c.data}` } },
  );
}
