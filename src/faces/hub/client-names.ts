// The MCP clients `baton connect` knows, apart from how it connects them (clients.ts): every `baton` command registers
// `connect` with these names, and only `connect` itself loads the plans and the file and process helpers they run
// (rule: lazy-commands).

export const CLIENTS = ['claude', 'codex', 'gemini', 'opencode'] as const;
export type ClientName = (typeof CLIENTS)[number];

export function isClientName(s: string): s is ClientName {
  return (CLIENTS as readonly string[]).includes(s);
}
