// process-safe: spawns nothing and leaves process-wide state as it found it (scripts/test.ts runs it in one process).
// Unit tests of the pure session/update → AgentEvent mapping (no processes).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PermissionOption, SessionUpdate } from '@agentclientprotocol/sdk';
import {
  choosePermissionOption,
  mapSessionUpdate,
  ToolCallTracker,
  toolFamily,
  usageFromPromptResponse,
} from '../../../src/agents/acp/events.ts';

test('tool updates give exactly one start and one end per call, in any arrival order', () => {
  const tools = new ToolCallTracker();
  const map = (u: SessionUpdate) => mapSessionUpdate(u, tools);
  // An update before its tool_call still opens the call once.
  assert.deepEqual(map({ sessionUpdate: 'tool_call_update', toolCallId: 'a', status: 'in_progress' }), [
    { kind: 'tool', phase: 'start', family: 'other' },
  ]);
  assert.deepEqual(map({ sessionUpdate: 'tool_call', toolCallId: 'a', title: 'x', kind: 'execute' }), []);
  // The end names the family its start named, whatever kind arrives later.
  assert.deepEqual(map({ sessionUpdate: 'tool_call_update', toolCallId: 'a', kind: 'fetch', status: 'completed' }), [
    { kind: 'tool', phase: 'end', family: 'other', ok: true },
  ]);
  assert.deepEqual(map({ sessionUpdate: 'tool_call_update', toolCallId: 'a', status: 'failed' }), [], 'ends once');
  // A tool_call that arrives already finished opens and closes at once.
  assert.deepEqual(map({ sessionUpdate: 'tool_call', toolCallId: 'b', title: 'y', kind: 'move', status: 'failed' }), [
    { kind: 'tool', phase: 'start', family: 'patch' },
    { kind: 'tool', phase: 'end', family: 'patch', ok: false },
  ]);
  assert.equal(toolFamily(undefined), 'other');
  assert.equal(toolFamily('delete'), 'patch');
});

test('only surfaced update kinds produce events; status is the active plan step, cleaned and cut to 200', () => {
  const tools = new ToolCallTracker();
  const hidden: SessionUpdate[] = [
    { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'secret' } },
    { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'replayed' } },
    { sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'AAAA', mimeType: 'image/png' } },
    { sessionUpdate: 'available_commands_update', availableCommands: [] },
    { sessionUpdate: 'current_mode_update', currentModeId: 'yolo' },
    { sessionUpdate: 'usage_update', used: 1, size: 2, cost: { amount: 3, currency: 'EUR' } },
    { sessionUpdate: 'plan', entries: [{ content: 'pending only', status: 'pending', priority: 'low' }] },
  ];
  for (const u of hidden) assert.deepEqual(mapSessionUpdate(u, tools), [], u.sessionUpdate);
  const long = `\u001b[31m${'word '.repeat(100)}`;
  const [status] = mapSessionUpdate(
    { sessionUpdate: 'plan', entries: [{ content: long, status: 'in_progress', priority: 'high' }] },
    tools,
  );
  assert.equal(status?.kind, 'status');
  const text = status?.kind === 'status' ? status.text : '';
  assert.equal([...text].length, 200);
  assert.ok(!text.includes('\u001b'));
});

test('permission option choice: allow once before always, reject once before always, none → undefined', () => {
  const opt = (optionId: string, kind: PermissionOption['kind']): PermissionOption => ({
    optionId,
    name: optionId,
    kind,
  });
  const all = [
    opt('aa', 'allow_always'),
    opt('ao', 'allow_once'),
    opt('ra', 'reject_always'),
    opt('ro', 'reject_once'),
  ];
  assert.equal(choosePermissionOption(all, true)?.optionId, 'ao');
  assert.equal(choosePermissionOption(all, false)?.optionId, 'ro');
  assert.equal(choosePermissionOption([opt('aa', 'allow_always')], false), undefined);
  assert.equal(choosePermissionOption([opt('ra', 'reject_always')], false)?.optionId, 'ra');
});

test('usage from the prompt response: draft usage field or Gemini quota meta; junk ignored', () => {
  assert.deepEqual(
    usageFromPromptResponse({ stopReason: 'end_turn', usage: { inputTokens: 5, outputTokens: 2 } } as never),
    {
      kind: 'usage',
      inputTokens: 5,
      outputTokens: 2,
    },
  );
  assert.deepEqual(
    usageFromPromptResponse({
      stopReason: 'end_turn',
      _meta: { quota: { token_count: { input_tokens: 7, output_tokens: 1 } } },
    }),
    { kind: 'usage', inputTokens: 7, outputTokens: 1 },
  );
  assert.equal(usageFromPromptResponse({ stopReason: 'end_turn' }), undefined);
  assert.equal(
    usageFromPromptResponse({ stopReason: 'end_turn', usage: { inputTokens: -1, outputTokens: 'x' } } as never),
    undefined,
  );
});
