// What one MCP call costs the hub daemon: a warm hub, one finished task, sequential agent_status,
// agent_wait (answered at once: the task has ended) and agent_result calls from the SDK v1 client the throughput bench
// uses (2025 session), hub CPU per call from /proc. The floor beside it: the same client calling a bare node:http
// JSON-RPC responder (json-rpc-echo.js: no SDK, no validation, no store), its CPU per call. Printed, not a goal: a
// delegation makes five such calls, which the direct ACP client does not.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call } from '../test/support/hub.ts';
import { delegate, makePlainDir, SHORT_PROMPT, scriptedHub } from './common.ts';
import {
  type BenchOptions,
  type Cleanup,
  info,
  interleave,
  processCpu,
  ratioOfMedians,
  type Section,
  series,
} from './harness.ts';

/** Calls per sample: a call is about a millisecond and the clock ticks every 10 ms. */
const CALLS = 300;

export async function mcpCall(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const work = makePlainDir(join(dir, 'work'));
  const { hub, client } = await scriptedHub(cleanup, dir, [work]);
  const hubPid = hub.group.child.pid!;
  const { taskId } = await delegate(client, SHORT_PROMPT, work);
  const end = await call<{ nextCursor: number }>(client, 'agent_wait', { taskId, after: 0 });

  const echo = spawn(process.execPath, [join(import.meta.dirname, 'json-rpc-echo.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  cleanup.after(async () => {
    if (echo.exitCode === null) {
      echo.kill();
      await once(echo, 'exit');
    }
  });
  const [line] = (await once(echo.stdout!, 'data')) as [Buffer];
  const bare = new Client({ name: 'bench-echo', version: '1.0.0' });
  await bare.connect(new StreamableHTTPClientTransport(new URL(line.toString().trim())));
  cleanup.after(() => bare.close().catch(() => {}));

  const perCall = (pid: number, c: Client, name: string, args: Record<string, unknown>) => async () => {
    const used = processCpu(pid);
    for (let i = 0; i < CALLS; i++) await c.callTool({ name, arguments: args });
    return used() / CALLS;
  };
  const notes = [
    `each sample: ${CALLS} sequential calls, CPU of the serving process per call (all its threads, from /proc/<pid>/task/*/schedstat).`,
    'echo: a bare node:http server answering the same client by hand (bench/json-rpc-echo.js), the floor no MCP server goes below.',
  ];
  const s = await interleave(
    opts.runs,
    {
      status: perCall(hubPid, client, 'agent_status', { taskId }),
      wait: perCall(hubPid, client, 'agent_wait', { taskId, after: end.nextCursor }),
      result: perCall(hubPid, client, 'agent_result', { taskId }),
      echo: perCall(echo.pid!, bare, 'echo', { taskId }),
    },
    { ms: 120_000, notes },
  );
  return {
    name: 'mcp-call',
    title: 'Hub CPU per MCP call (warm hub, 2025 session, SDK v1 client) vs a bare node:http JSON-RPC responder',
    series: [
      series('hub, agent_status', 'ms CPU/call', s.status!),
      series('hub, agent_wait (ended task)', 'ms CPU/call', s.wait!),
      series('hub, agent_result', 'ms CPU/call', s.result!),
      series('bare node:http echo', 'ms CPU/call', s.echo!),
    ],
    checks: [
      info('agent_status / echo (median)', ratioOfMedians(s.status!, s.echo!)),
      info('agent_wait / echo (median)', ratioOfMedians(s.wait!, s.echo!)),
      info('agent_result / echo (median)', ratioOfMedians(s.result!, s.echo!)),
    ],
    notes,
  };
}
