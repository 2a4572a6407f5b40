// The scripted ACP test agent (test/fixtures/acp-test-agent.ts) as tests configure it, and its script format.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Its plain-JS entry, which turns on Node's compile cache before loading the TypeScript agent (see the file). */
export const SCRIPTED_ACP_AGENT = fileURLToPath(new URL('../fixtures/acp-test-agent.mjs', import.meta.url));

/** A prompt the scripted agent runs step by step (see the fixture's header for the steps). */
export const acpScript = (steps: unknown[]) => JSON.stringify({ steps });

/** A test dir's `work` root and the hub agent entry for the scripted ACP agent (with its own state dir and record). */
export function scriptedAgentSetup(dir: string) {
  const work = join(dir, 'work');
  mkdirSync(work, { recursive: true });
  const record = join(dir, 'agent-record.jsonl');
  const state = join(dir, 'agent-state');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  return {
    work,
    record,
    entry: {
      kind: 'acp',
      command: [process.execPath, SCRIPTED_ACP_AGENT],
      env: { ACP_TEST_AGENT_RECORD: record, ACP_TEST_AGENT_STATE: state },
      cancelGraceMs: 1_000,
    },
  };
}
