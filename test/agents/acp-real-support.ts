// Shared by the real-binary ACP tests: run one turn and collect its events, aborting on an event when asked.
import assert from 'node:assert/strict';
import type { AgentEvent, AgentSession } from '../../src/agents/agent.ts';

export type EndEvent = Extract<AgentEvent, { kind: 'end' }>;

export async function runTurn(session: AgentSession, prompt: string, abortWhen?: (e: AgentEvent) => boolean) {
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  for await (const e of session.turn(prompt, { signal: controller.signal })) {
    events.push(e);
    if (abortWhen?.(e) && !controller.signal.aborted) controller.abort();
  }
  const ends = events.filter((e) => e.kind === 'end');
  assert.equal(ends.length, 1, 'a turn ends with exactly one end event');
  const text = events.map((e) => (e.kind === 'message' ? e.text : '')).join('');
  return { events, end: ends[0] as EndEvent, text };
}
