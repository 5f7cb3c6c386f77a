/**
 * The sandbox tools for the Vercel AI SDK (`ai`, 5 and later): a ToolSet keyed by tool name, made
 * with its `tool()` and `jsonSchema()`, to pass as `tools` to generateText or streamText. A failure
 * is thrown, which the AI SDK gives the model as the tool's error.
 *
 * ```ts
 * const { text } = await generateText({ model, tools: aiTools(sandbox), stopWhen: stepCountIs(10), prompt });
 * ```
 */
import { jsonSchema, tool, type Tool } from 'ai';
import { sandboxTools, type SandboxSource, type SandboxToolsOptions } from './index.js';

export function aiTools(sandbox: SandboxSource, options: SandboxToolsOptions = {}): Record<string, Tool<Record<string, unknown>, string>> {
  const tools: Record<string, Tool<Record<string, unknown>, string>> = {};
  for (const def of sandboxTools(sandbox, options)) {
    tools[def.name] = tool<Record<string, unknown>, string>({
      description: def.description,
      // The JSON Schema is the same object the other adapters send; the tool checks the input itself.
      inputSchema: jsonSchema<Record<string, unknown>>(def.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (input, { abortSignal }) => (await def.execute(input, abortSignal ? { signal: abortSignal } : {})).text,
    });
  }
  return tools;
}
