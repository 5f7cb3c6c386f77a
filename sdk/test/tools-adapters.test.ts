/**
 * The framework adapters (sdk/src/tools/{openai,anthropic,ai,langchain}.ts) against the real runtime
 * process, each checked with that framework's own types and driven the way the framework drives a
 * tool, without a language model: OpenAI's ChatCompletionTool / ChatCompletionMessageToolCall /
 * ChatCompletionToolMessageParam types, Anthropic's Tool / ToolUseBlock / ToolResultBlockParam,
 * the AI SDK's generateText with its mock model (and tool.execute), LangChain's tool.invoke.
 * Negative controls: invalid input is refused naming the field; a failing command is reported
 * with its exit code.
 */
import type { MessageParam, Tool as AnthropicApiTool, ToolResultBlockParam, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import { ToolInputParsingException } from '@langchain/core/tools';
import { generateText, stepCountIs, type ToolSet } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import type { ChatCompletionMessageParam, ChatCompletionMessageToolCall, ChatCompletionTool, ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import { runtimeFixture } from './handle';
import { aiTools } from '../src/tools/ai';
import { anthropicTools } from '../src/tools/anthropic';
import { langchainTools } from '../src/tools/langchain';
import { openaiTools } from '../src/tools/openai';

const fixture = runtimeFixture();
const TOOL_NAMES = ['execute_command', 'write_file', 'read_file', 'list_files', 'file_exists', 'remove_file'];

describe('OpenAI Chat Completions', () => {
  test('tools are ChatCompletionTools; tool calls are answered with tool messages', async () => {
    const { tools, handleToolCall } = openaiTools(fixture().sandbox);
    const typed: ChatCompletionTool[] = tools;
    expect(typed.map((t) => t.type === 'function' && t.function.name)).toEqual(TOOL_NAMES);
    expect(tools[0].function.parameters).toMatchObject({ type: 'object', required: ['command'] });

    const write: ChatCompletionMessageToolCall = { id: 'call_1', type: 'function', function: { name: 'write_file', arguments: JSON.stringify({ path: 'hi.py', content: 'print(6 * 7)\n' }) } };
    const runIt: ChatCompletionMessageToolCall = { id: 'call_2', type: 'function', function: { name: 'execute_command', arguments: '{"command":"python3 hi.py"}' } };
    const messages: ChatCompletionMessageParam[] = [{ role: 'assistant', content: null, tool_calls: [write, runIt] }];
    for (const call of [write, runIt]) {
      const answer: ChatCompletionToolMessageParam = await handleToolCall(call);
      messages.push(answer);
    }
    expect(messages.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'wrote 13 bytes to hi.py' },
      { role: 'tool', tool_call_id: 'call_2', content: 'exit code: 0\nstdout:\n42' },
    ]);
  });

  test('negative controls: bad arguments and a failing command are answered for the model to read', async () => {
    const { handleToolCall } = openaiTools(fixture().sandbox);
    const call = (name: string, args: string): ChatCompletionMessageToolCall => ({ id: 'c', type: 'function', function: { name, arguments: args } });
    expect((await handleToolCall(call('execute_command', '{"timeout_seconds": 5}'))).content).toBe('Invalid input: command: is required');
    expect((await handleToolCall(call('execute_command', '{"command": "ls",'))).content).toMatch(/^Invalid input: the arguments are not JSON/);
    expect((await handleToolCall(call('execute_command', '{"command": "exit 7"}'))).content).toBe('exit code: 7\n(no output)');
    const custom: ChatCompletionMessageToolCall = { id: 'c2', type: 'custom', custom: { name: 'x', input: 'y' } };
    expect(await handleToolCall(custom)).toEqual({ role: 'tool', tool_call_id: 'c2', content: 'Error: only function tool calls are handled, got type "custom"' });
  });
});

describe('Anthropic Messages', () => {
  test('tools are Tools; tool_use blocks are answered with tool_result blocks', async () => {
    const { tools, handleToolUse, handleToolUses } = anthropicTools(fixture().sandbox);
    const typed: AnthropicApiTool[] = tools;
    expect(typed.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(tools[1].input_schema).toMatchObject({ type: 'object', required: ['path', 'content'] });

    const use = (id: string, name: string, input: unknown): ToolUseBlock => ({ type: 'tool_use', id, name, input, caller: { type: 'direct' } });
    const result: ToolResultBlockParam = await handleToolUse(use('toolu_1', 'write_file', { path: 'a.txt', content: 'abc' }));
    expect(result).toEqual({ type: 'tool_result', tool_use_id: 'toolu_1', content: 'wrote 3 bytes to a.txt' });

    // A whole assistant turn: text and two tool uses, answered in order as the next user message.
    const content = [{ type: 'text' as const, text: 'Let me check.', citations: null }, use('toolu_2', 'read_file', { path: 'a.txt' }), use('toolu_3', 'file_exists', { path: 'b.txt' })];
    const next: MessageParam = { role: 'user', content: await handleToolUses(content) };
    expect(next.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_2', content: 'abc' },
      { type: 'tool_result', tool_use_id: 'toolu_3', content: 'b.txt does not exist' },
    ]);
  });

  test('negative controls: invalid input is an is_error result naming the field; a failing command is a result with its exit code', async () => {
    const { handleToolUse } = anthropicTools(fixture().sandbox);
    const use = (name: string, input: unknown): ToolUseBlock => ({ type: 'tool_use', id: 'toolu_x', name, input, caller: { type: 'direct' } });
    expect(await handleToolUse(use('write_file', { path: 'x' }))).toEqual({ type: 'tool_result', tool_use_id: 'toolu_x', content: 'Invalid input: content: is required', is_error: true });
    expect(await handleToolUse(use('read_file', { path: 'missing.txt' }))).toEqual({ type: 'tool_result', tool_use_id: 'toolu_x', content: 'Error: missing.txt: no such file', is_error: true });
    expect(await handleToolUse(use('execute_command', { command: 'echo bad >&2; exit 2' }))).toEqual({ type: 'tool_result', tool_use_id: 'toolu_x', content: 'exit code: 2\nstderr:\nbad' });
  });
});

describe('Vercel AI SDK', () => {
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

  test('generateText runs the tools the mock model calls, and gives the model their results', async () => {
    const tools: ToolSet = aiTools(fixture().sandbox);
    expect(Object.keys(tools)).toEqual(TOOL_NAMES);
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            { type: 'tool-call', toolCallId: 't1', toolName: 'write_file', input: JSON.stringify({ path: 'ai.py', content: 'print("from ai")\n' }) },
            { type: 'tool-call', toolCallId: 't2', toolName: 'execute_command', input: JSON.stringify({ command: 'python3 ai.py; exit 3' }) },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_use' },
          usage,
          warnings: [],
        },
        { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
      ],
    });
    const result = await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'write and run a program' });
    expect(result.text).toBe('done');
    const outputs = result.steps[0].toolResults.map((r) => [r.toolName, r.output]);
    expect(outputs).toEqual([['write_file', 'wrote 17 bytes to ai.py'], ['execute_command', 'exit code: 3\nstdout:\nfrom ai']]);
    // The model was offered the JSON Schemas, and saw the results in its second call.
    const offered = model.doGenerateCalls[0].tools!.find((t) => t.name === 'execute_command');
    expect(offered).toMatchObject({ type: 'function', inputSchema: { type: 'object', required: ['command'] } });
    expect(JSON.stringify(model.doGenerateCalls[1].prompt)).toContain('exit code: 3');
  });

  test('tool.execute as the AI SDK calls it; negative control: invalid input is refused naming the field', async () => {
    const tools = aiTools(fixture().sandbox);
    const options = { toolCallId: 'call-1', messages: [] };
    expect(await tools.file_exists.execute!({ path: 'ai.py' }, options)).toBe('ai.py exists');
    await expect(tools.execute_command.execute!({ command: 'ls', timeout_seconds: -1 }, options)).rejects.toThrow('timeout_seconds: must be between 1 and 600, got -1');
  });
});

describe('LangChain.js', () => {
  test('tool.invoke runs the tool; the tools carry the JSON Schemas', async () => {
    const tools = langchainTools(fixture().sandbox);
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(await byName.write_file.invoke({ path: 'lc.sh', content: 'echo from langchain; exit 4\n' })).toBe('wrote 28 bytes to lc.sh');
    // A failing command is a result with its exit code.
    expect(await byName.execute_command.invoke({ command: 'sh lc.sh' })).toBe('exit code: 4\nstdout:\nfrom langchain');
    // As a ToolNode calls it: a ToolCall in, a ToolMessage out.
    const message = await byName.list_files.invoke({ id: 'call-9', name: 'list_files', args: {}, type: 'tool_call' });
    expect(message).toMatchObject({ tool_call_id: 'call-9', content: expect.stringMatching(/lc\.sh \(28 bytes\)/) });
  });

  test('negative controls: LangChain\'s own schema check refuses invalid input, and the tool\'s check names the field', async () => {
    const byName = Object.fromEntries(langchainTools(fixture().sandbox).map((t) => [t.name, t]));
    await expect(byName.execute_command.invoke({ timeout_seconds: 5 })).rejects.toThrow(ToolInputParsingException);
    await expect(byName.execute_command.invoke({ timeout_seconds: 5 })).rejects.toThrow(/did not match expected schema\nDetails: .*command/);
    await expect(byName.read_file.invoke({ path: 'x', encoding: 'latin1' })).rejects.toThrow(/Details: .*encoding/);
    // The tool's own check (what LangChain's schema cannot say: a path above the workspace).
    await expect(byName.write_file.invoke({ path: '../../x', content: 'x' })).rejects.toThrow(/^path: /);
  });
});
