/**
 * The sandbox tools for OpenAI's Chat Completions API: `tools` entries to send with the request, and
 * `handleToolCall` to answer each of the response's `tool_calls` with a `tool` message. Plain objects
 * of the API's shapes: the `openai` package is not needed (its types accept them).
 *
 * ```ts
 * const { tools, handleToolCall } = openaiTools(sandbox);
 * const response = await openai.chat.completions.create({ model, messages, tools });
 * for (const call of response.choices[0].message.tool_calls ?? []) messages.push(await handleToolCall(call));
 * ```
 */
import { callSandboxTool, sandboxTools, type SandboxSource, type SandboxToolsOptions, type ToolCallContext } from './index.js';

/** A `tools` entry (ChatCompletionFunctionTool). */
export interface OpenAIFunctionTool {
  readonly type: 'function';
  readonly function: {
    readonly name: string;
    readonly description: string;
    readonly parameters: Record<string, unknown>;
  };
}

/** A `tool_calls` entry of an assistant message (ChatCompletionMessageToolCall): function calls are handled, others answered with an error. */
export interface OpenAIToolCall {
  readonly id: string;
  readonly type: string;
  readonly function?: { readonly name: string; readonly arguments: string };
}

/** The answer to one tool call (ChatCompletionToolMessageParam). */
export interface OpenAIToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export interface OpenAITools {
  readonly tools: OpenAIFunctionTool[];
  /** Runs the call's tool with its JSON arguments. Never rejects: a bad call or a failure is the message's content, for the model to read. */
  handleToolCall(toolCall: OpenAIToolCall, context?: ToolCallContext): Promise<OpenAIToolMessage>;
}

export function openaiTools(sandbox: SandboxSource, options: SandboxToolsOptions = {}): OpenAITools {
  const defs = sandboxTools(sandbox, options);
  return {
    tools: defs.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: { ...t.inputSchema } } })),
    async handleToolCall(toolCall, context) {
      const answer = (content: string): OpenAIToolMessage => ({ role: 'tool', tool_call_id: toolCall.id, content });
      if (toolCall.type !== 'function' || !toolCall.function) return answer(`Error: only function tool calls are handled, got type "${toolCall.type}"`);
      let input: unknown;
      try {
        input = toolCall.function.arguments.trim() === '' ? {} : JSON.parse(toolCall.function.arguments);
      } catch (err) {
        return answer(`Invalid input: the arguments are not JSON (${(err as Error).message})`);
      }
      return answer((await callSandboxTool(defs, toolCall.function.name, input, context)).text);
    },
  };
}
