/**
 * The sandbox tools for Anthropic's Messages API: `tools` entries to send with the request, and
 * `handleToolUse` to answer a response's `tool_use` block with a `tool_result` block (failures with
 * `is_error: true`). Plain objects of the API's shapes: `@anthropic-ai/sdk` is not needed.
 *
 * ```ts
 * const { tools, handleToolUses } = anthropicTools(sandbox);
 * const message = await anthropic.messages.create({ model, max_tokens, messages, tools });
 * messages.push({ role: 'assistant', content: message.content }, { role: 'user', content: await handleToolUses(message.content) });
 * ```
 */
import { callSandboxTool, sandboxTools, type SandboxSource, type SandboxToolsOptions, type ToolCallContext } from './index.js';

/** A `tools` entry (a custom Tool). */
export interface AnthropicTool {
  readonly name: string;
  readonly description: string;
  readonly input_schema: { readonly type: 'object'; readonly [key: string]: unknown };
}

/** A `tool_use` content block (ToolUseBlock). */
export interface AnthropicToolUse {
  readonly type: 'tool_use';
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** The answer to one tool use (ToolResultBlockParam). */
export interface AnthropicToolResult {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

export interface AnthropicTools {
  readonly tools: AnthropicTool[];
  /** Runs the block's tool. Never rejects: a bad input or a failure is a result with `is_error: true`. */
  handleToolUse(block: AnthropicToolUse, context?: ToolCallContext): Promise<AnthropicToolResult>;
  /** Answers every `tool_use` block of a message's content, in order (other blocks are skipped): the next user message's content. */
  handleToolUses(content: readonly { readonly type: string }[], context?: ToolCallContext): Promise<AnthropicToolResult[]>;
}

export function anthropicTools(sandbox: SandboxSource, options: SandboxToolsOptions = {}): AnthropicTools {
  const defs = sandboxTools(sandbox, options);
  const handleToolUse = async (block: AnthropicToolUse, context?: ToolCallContext): Promise<AnthropicToolResult> => {
    const { text, isError } = await callSandboxTool(defs, block.name, block.input, context);
    return { type: 'tool_result', tool_use_id: block.id, content: text, ...(isError ? { is_error: true } : {}) };
  };
  return {
    tools: defs.map((t) => ({ name: t.name, description: t.description, input_schema: { ...t.inputSchema } })),
    handleToolUse,
    async handleToolUses(content, context) {
      const results: AnthropicToolResult[] = [];
      for (const block of content) if (block.type === 'tool_use') results.push(await handleToolUse(block as AnthropicToolUse, context));
      return results;
    },
  };
}
