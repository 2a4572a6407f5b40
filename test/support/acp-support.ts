// Shared by the ACP adapter tests: run one turn and collect its events, aborting on an event when asked (event-driven).
import assert from 'node:assert/strict';
import type { AgentEvent, AgentSession } from '../../src/agents/agent.ts';
import { Gate } from '../mock-models/server.ts';

export type EndEvent = Extract<AgentEvent, { kind: 'end' }>;

/** `prompt` objects are sent as JSON (the scripted test agent's script format). */
export async function runTurn(session: AgentSession, prompt: string | object, abortWhen?: (e: AgentEvent) => boolean) {
  const controller = new AbortController();
  const events: AgentEvent[] = [];
  for await (const e of session.turn(typeof prompt === 'string' ? prompt : JSON.stringify(prompt), {
    signal: controller.signal,
  })) {
    events.push(e);
    if (abortWhen?.(e) && !controller.signal.aborted) controller.abort();
  }
  const ends = events.filter((e) => e.kind === 'end');
  assert.equal(ends.length, 1, 'a turn ends with exactly one end event');
  assert.equal(events.at(-1)?.kind, 'end', 'the end event is the last one');
  const text = events.map((e) => (e.kind === 'message' ? e.text : '')).join('');
  return { events, end: ends[0] as EndEvent, text };
}

/** The step shapes the Gemini and chat-completions mocks share. */
type SharedStep = { type: 'stall'; gate: Gate; before?: string[] } | { type: 'text'; chunks: string[] };

/** A stalled streamed answer is cancelled and the agent acknowledges it; the same session then answers again. */
export async function assertStallCancelAcknowledged(
  session: AgentSession,
  mock: { script: { push(...steps: SharedStep[]): unknown } },
): Promise<void> {
  const gate = new Gate();
  mock.script.push({ type: 'stall', gate, before: ['thinking'] });
  const { end, text } = await runTurn(session, 'take your time', (e) => e.kind === 'message');
  gate.open();
  assert.deepEqual(end, { kind: 'end', outcome: 'cancelled', acknowledged: true });
  assert.equal(text, 'thinking');
  mock.script.push({ type: 'text', chunks: ['back'] });
  assert.equal((await runTurn(session, 'still there?')).text, 'back');
}
