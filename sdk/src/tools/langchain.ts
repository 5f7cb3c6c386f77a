/**
 * The sandbox tools for LangChain.js (`@langchain/core`): DynamicStructuredTools with the tools'
 * JSON Schemas, for `model.bindTools(...)`, a LangGraph ToolNode or `createAgent({ tools })`.
 * LangChain checks the input against the schema (its refusal names the field), then the tool checks
 * it again; a failure is thrown (a ToolNode gives the model its message).
 *
 * ```ts
 * const agent = createAgent({ model, tools: langchainTools(sandbox) });
 * ```
 */
import { DynamicStructuredTool } from '@langchain/core/tools';
import type { JSONSchema } from '@langchain/core/utils/json_schema';
import { sandboxTools, type SandboxSource, type SandboxToolsOptions } from './index.js';

export function langchainTools(sandbox: SandboxSource, options: SandboxToolsOptions = {}): DynamicStructuredTool[] {
  return sandboxTools(sandbox, options).map((def) => new DynamicStructuredTool({
    name: def.name,
    description: def.description,
    schema: { ...def.inputSchema } as JSONSchema,
    // LangChain's refusal of an input that does not fit the schema then says which field, for the model.
    verboseParsingErrors: true,
    func: async (input: unknown, _runManager, config) => (await def.execute(input, config?.signal ? { signal: config.signal } : {})).text,
  }));
}
