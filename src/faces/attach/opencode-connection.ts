// OpenCode server connections over http(s) (AT-2, AT-5).
import { AttachError } from './errors.ts';
import type { HarnessConnector } from './harness.ts';

export const connectOpenCode: HarnessConnector = async () => {
  throw new AttachError('OpenCode connections are not available yet in this build');
};
