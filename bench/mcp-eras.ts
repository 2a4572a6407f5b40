// One tools/call round trip on the hub in each MCP era: a 2026-07-28 stateless request (SDK v2 client,
// per-request _meta, no session) vs a 2025-era request on an initialized session (SDK v2 client, Mcp-Session-Id), the
// same tool (agent_list) on the same hub, interleaved. Printed as ms per call and their ratio, for context.

import { startHub } from '../test/support/hub.ts';
import { connectV2 } from '../test/support/mcp-v2.ts';
import { makePlainDir } from './common.ts';
import {
  type BenchOptions,
  type Cleanup,
  info,
  interleave,
  meanMs,
  ratioOfMedians,
  type Section,
  series,
} from './harness.ts';

/** Calls per sample: one round trip is well under a millisecond's worth of clock noise on a quiet machine. */
const CALLS = 50;

export async function mcpEras(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const work = makePlainDir(`${dir}/work`);
  const hub = await startHub(cleanup, { dir, roots: [work], agents: {} });
  const modern = await connectV2(cleanup, hub, 'alice', 'modern');
  const legacy = await connectV2(cleanup, hub, 'alice', 'legacy');
  const perCall = (client: typeof modern) => () =>
    meanMs(CALLS, () => client.callTool({ name: 'agent_list', arguments: {} }));
  const notes: string[] = [
    `each sample is the mean of ${CALLS} sequential agent_list calls; the hub builds a server instance per stateless request (the SDK's handler serves each instance once) and keeps one per caller for 2025 sessions.`,
  ];
  const s = await interleave(
    opts.runs,
    { stateless: perCall(modern), session: perCall(legacy) },
    { ms: 60_000, notes },
  );
  return {
    name: 'mcp-eras',
    title: 'tools/call round trip: 2026-07-28 stateless vs 2025 session',
    series: [
      series('2026-07-28 stateless tools/call', 'ms', s.stateless!),
      series('2025 session tools/call', 'ms', s.session!),
    ],
    checks: [info('stateless / session (median)', ratioOfMedians(s.stateless!, s.session!))],
    notes,
  };
}
