// V8's newer JSON.stringify for the processes that answer MCP. Every answer is JSON, and a tool answer carries its text
// twice (rule: paged-results), so a result page is a large document. Node 24's V8 ships that serializer behind a flag,
// off; later V8s have it on by default, so the flag is set on Node 24 only (an unknown flag would print an error). It
// writes the same text: test/lib/json-stringify.test.ts compares the two serializers on baton's wire shapes and on the
// cases where a serializer's shortcut could go wrong. Set by the serving commands only (`serve`, `mcp`, `attach`):
// loading node:v8 has a start-up cost the other commands, whose output is small, would pay for nothing. Measured in
// bench/README.md, "A faster JSON.stringify, and each measure in its own process".
import { setFlagsFromString } from 'node:v8';

export function useFastJsonStringify(): void {
  if (Number(process.versions.node.split('.')[0]) === 24) setFlagsFromString('--json-stringify-fast-path');
}
