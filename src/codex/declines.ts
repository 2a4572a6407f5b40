// Rule `deny-and-report`: the one table of Codex server requests baton declines (approvals, elicitations, requests for
// user input), with the answer that declines each and what it is about (never its arguments). Every Codex client in
// baton (the agent adapter, the attach face) answers from this table, so a method added here is declined everywhere at
// once.

export interface CodexDecline {
  /** What the request asked for, in words fit for an event (no arguments, no paths). */
  readonly what: string;
  /** The protocol answer that declines it (never a grant). */
  readonly answer: unknown;
}

const CODEX_DECLINES: Readonly<Record<string, CodexDecline>> = {
  'item/commandExecution/requestApproval': { what: 'command execution', answer: { decision: 'decline' } },
  'item/fileChange/requestApproval': { what: 'file change', answer: { decision: 'decline' } },
  'item/permissions/requestApproval': { what: 'extra permissions', answer: { permissions: {}, scope: 'turn' } },
  'mcpServer/elicitation/request': {
    what: 'MCP elicitation',
    answer: { action: 'decline', content: null, _meta: null },
  },
  'item/tool/requestUserInput': { what: 'user input', answer: { answers: {} } },
  // The v1 approval requests older Codex releases still send.
  execCommandApproval: { what: 'command execution', answer: { decision: 'denied' } },
  applyPatchApproval: { what: 'file change', answer: { decision: 'denied' } },
};

/** Methods baton declines, for tests and docs. */
export const DECLINED_CODEX_METHODS: readonly string[] = Object.keys(CODEX_DECLINES);

/** How to decline a server request, or undefined when baton does not decline this method (answer -32601 instead). */
export function codexDecline(method: string): CodexDecline | undefined {
  return Object.hasOwn(CODEX_DECLINES, method) ? CODEX_DECLINES[method] : undefined;
}
