// V8's newer JSON.stringify for the processes that answer MCP (issue 13). Every answer is JSON, and a tool answer
// carries its text twice (rule: paged-results), so a 32,768-code-point result page is about 66 KB of it. Node 24's V8
// (13.6) ships that serializer behind a flag, off; V8 13.8 and later (Node 25+) have it on by default, so the flag is
// set on Node 24 only (an unknown flag would print an error). It writes the same text: test/unit/json-stringify.test.ts
// compares the two serializers on baton's wire shapes and on the cases where a serializer's shortcut could go wrong.
// What it changes: 5-7x less CPU per large answer (a result page's message 344 → 60 µs), about a fifth of the hub's CPU
// when paging a 10 MiB result, and a document nested tens of thousands deep is written out instead of overflowing the
// stack. Set by the serving commands only (`serve`, `mcp`, `attach`): loading node:v8 costs a start about 2.4 ms, which
// the other commands, whose output is small, would pay for nothing.
import { setFlagsFromString } from 'node:v8';

export function useFastJsonStringify(): void {
  if (Number(process.versions.node.split('.')[0]) === 24) setFlagsFromString('--json-stringify-fast-path');
}
