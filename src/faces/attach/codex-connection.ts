// Codex app-server connections over ws(s) (AT-2, AT-5).
import { AttachError } from './errors.ts';
import type { HarnessConnector } from './harness.ts';

export const connectCodex: HarnessConnector = async () => {
  throw new AttachError('Codex connections are not available yet in this build');
};
