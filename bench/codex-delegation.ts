// Hub delegation with the real `codex app-server` (against the suite's Responses mock) vs a raw JSON-RPC client doing
// the same work: spawn app-server, initialize, thread/start, turn/start, read until turn/completed, close stdin, wait
// for the exit. Both sides run in a plain dir so only the hub's own work differs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { mockCodexEnv, ResponsesMock, reply, writeMockCodexHome } from '../test/mock-models/responses.ts';
import { bins } from '../test/support/bins.ts';
import { connectCaller, startHub } from '../test/support/hub.ts';
import { delegate, expectText, hubEnv, makePlainDir } from './common.ts';
import {
  atMost,
  type BenchOptions,
  type Cleanup,
  interleave,
  ratioOfMedians,
  type Section,
  series,
  timed,
} from './harness.ts';

const ANSWER = 'codex bench answer';

export async function codexDelegation(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const mock = await ResponsesMock.start(reply(ANSWER));
  cleanup.after(() => mock.close());
  const work = makePlainDir(join(dir, 'work'));
  const hub = await startHub(
    cleanup,
    {
      dir,
      roots: [work],
      agents: {
        codex: {
          kind: 'codex',
          command: [process.execPath, bins.codex()],
          model: 'mock-model',
          modelProvider: { id: 'mock', baseUrl: mock.baseUrl, requiresOpenaiAuth: false, streamMaxRetries: 0 },
          userCodexHome: join(dir, 'no-user-login'),
        },
      },
    },
    hubEnv(),
  );
  const client = await connectCaller(cleanup, hub, 'alice');
  const codexHome = writeMockCodexHome(join(dir, 'direct-codex-home'), mock);
  const notes: string[] = [];
  const s = await interleave(
    opts.runs,
    {
      hub: () => timed(async () => expectText((await delegate(client, 'say it', work)).text, ANSWER)),
      direct: () => timed(async () => expectText(await directCodex(codexHome, work, 'say it'), ANSWER)),
    },
    { ms: 40_000, notes },
  );
  await hub.stop();
  return {
    name: 'codex',
    title: 'Hub delegation, real `codex app-server` on the Responses mock, vs a raw JSON-RPC client',
    series: [series('hub', 'ms', s.hub!), series('raw JSON-RPC client', 'ms', s.direct!)],
    checks: [atMost('hub / direct (median)', ratioOfMedians(s.hub!, s.direct!), 1.1)],
    notes,
  };
}

/** A bare JSON-RPC-over-JSONL client for one Codex turn; returns the final agent message. */
async function directCodex(codexHome: string, cwd: string, prompt: string): Promise<string> {
  const child = spawn(process.execPath, [bins.codex(), 'app-server'], {
    cwd,
    env: mockCodexEnv(codexHome),
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = once(child, 'exit');
  const pending = new Map<number, PromiseWithResolvers<unknown>>();
  const turnDone = Promise.withResolvers<void>();
  let answer = '';
  let nextId = 0;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const msg = JSON.parse(line) as {
      id?: number;
      method?: string;
      params?: { item?: { type?: string; text?: string } };
      result?: unknown;
      error?: unknown;
    };
    if (msg.id !== undefined && msg.method === undefined) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(JSON.stringify(msg.error)));
      else p?.resolve(msg.result);
    } else if (msg.method === 'item/completed' && msg.params?.item?.type === 'agentMessage') {
      answer = msg.params.item.text ?? '';
    } else if (msg.method === 'turn/completed') turnDone.resolve();
  });
  const request = (method: string, params: unknown) => {
    const id = ++nextId;
    const p = Promise.withResolvers<unknown>();
    pending.set(id, p);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return p.promise;
  };
  await request('initialize', { clientInfo: { name: 'bench', title: 'bench', version: '0' }, capabilities: null });
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'initialized' })}\n`);
  const thread = (await request('thread/start', { cwd, sandbox: 'workspace-write', approvalPolicy: 'never' })) as {
    thread: { id: string };
  };
  await request('turn/start', {
    threadId: thread.thread.id,
    input: [{ type: 'text', text: prompt, text_elements: [] }],
  });
  await turnDone.promise;
  child.stdin.end();
  await exited;
  return answer;
}
