// The scripted ACP test agent (test/fixtures/acp-test-agent.ts) as tests configure it, and its script format.
import { fileURLToPath } from 'node:url';

export const SCRIPTED_ACP_AGENT = fileURLToPath(new URL('../fixtures/acp-test-agent.ts', import.meta.url));

/** A prompt the scripted agent runs step by step (see the fixture's header for the steps). */
export const acpScript = (steps: unknown[]) => JSON.stringify({ steps });
