// OpenCode's permission requests (rules: deny-and-report, approvals). A `permission.asked` event of the running turn is
// rejected with a message the model reads, unless the approval policy is `ask`: then it is put to someone as
// "allow once", "allow always" or "deny", and answered on the server's reply endpoint as `once`, `always` or `reject`.
// Only OpenCode's permission name (bash, edit, external_directory, …) is shown, never the patterns or the command.
import { statusLine } from '../../lib/text.ts';
import type { AgentEvent, OpenSessionOptions, PermissionDecision, ToolFamily } from '../agent.ts';
import type { OpenCodeClient } from './client.ts';

const UNATTENDED = 'baton runs this task unattended and denies permission requests; continue without it';
const REFUSED = 'the permission was refused; continue without it';

/** The family of an OpenCode tool or permission name. */
export function toolFamily(tool: string): ToolFamily {
  if (tool === 'bash') return 'command';
  if (tool === 'edit' || tool === 'write' || tool === 'patch' || tool === 'multiedit') return 'patch';
  if (tool === 'webfetch' || tool === 'websearch') return 'web';
  if (tool === 'task') return 'subagent';
  return 'other';
}

const REPLY: Record<PermissionDecision, 'once' | 'always' | 'reject'> = {
  allow: 'once',
  allow_always: 'always',
  deny: 'reject',
  deny_always: 'reject',
};

/**
 * Answers one permission request of this session: rejected, or with `ask` the decision someone gives. Resolves with
 * the `permission` event that reports it; a reply the server no longer takes (the turn was aborted) is not an error.
 */
export async function answerPermission(
  client: OpenCodeClient,
  directory: string,
  request: { id: string; permission: string },
  ask: OpenSessionOptions['ask'],
): Promise<AgentEvent> {
  const what = statusLine(request.permission);
  const decision = ask
    ? await ask({ family: toolFamily(request.permission), what, options: ['allow', 'allow_always', 'deny'] })
    : 'deny';
  const reply = REPLY[decision];
  const message = ask ? REFUSED : UNATTENDED;
  await client
    .replyPermission(request.id, reply === 'reject' ? { reply, message } : { reply }, { directory })
    .catch(() => false);
  return { kind: 'permission', decision: reply === 'reject' ? 'denied' : 'allowed', what };
}
