// What several measures share: the work dirs (a git repository and a plain dir), the baseline ACP client (the ACP
// SDK's client side driving an agent directly, no baton code), and one delegation through a hub.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { call, connectCaller, followToEnd, type RunningHub, startHub } from '../test/support/hub.ts';
import { SCRIPTED_ACP_AGENT } from '../test/support/scripted-agent.ts';
import type { Cleanup } from './harness.ts';

/** The scripted test agent's prompt for a short answer, and that answer. */
export const SHORT_PROMPT = JSON.stringify({ steps: [{ chunks: ['bench ', 'answer'] }] });
export const SHORT_ANSWER = 'bench answer';

/** The scripted ACP test agent as a hub's agents entry (and the command the direct client runs). */
export const SCRIPTED_AGENT_COMMAND = [process.execPath, SCRIPTED_ACP_AGENT];

/**
 * A git repository shaped like a small real project (a few hundred tracked files in nested dirs, one commit, one
 * modified and one untracked file), so git snapshots cost what they cost for a user.
 */
export function makeGitRepo(dir: string): string {
  mkdirSync(dir, { recursive: true });
  for (let d = 0; d < 20; d++) {
    const sub = join(dir, 'src', `mod${d}`);
    mkdirSync(sub, { recursive: true });
    for (let f = 0; f < 15; f++) writeFileSync(join(sub, `file${f}.ts`), `export const v${f} = ${d * 100 + f};\n`);
  }
  writeFileSync(join(dir, 'README.md'), '# bench repo\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@example.invalid', ...args], {
      cwd: dir,
      stdio: 'ignore',
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'initial');
  writeFileSync(join(dir, 'README.md'), '# bench repo, edited\n');
  writeFileSync(join(dir, 'untracked.txt'), 'new\n');
  return dir;
}

export function makePlainDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'notes.txt'), 'not a repository\n');
  return dir;
}

/**
 * The baseline: the ACP SDK client spawns the agent in `cwd`, initializes, opens a session, sends one prompt and
 * collects the answer, then closes stdin and waits for the agent to exit (the agent's whole life, as a delegation has).
 */
export async function directAcp(command: string[], cwd: string, prompt: string): Promise<string> {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, { cwd, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = once(child, 'exit');
  let text = '';
  const connection = acp
    .client({ name: 'bench-direct' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === 'agent_message_chunk' && u.content.type === 'text') text += u.content.text;
    })
    .connect(
      acp.ndJsonStream(
        Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
        { maxMessageBytes: 64 * 1024 * 1024 },
      ),
    );
  const agent = connection.agent;
  await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  const end = await agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: prompt }],
  });
  if (end.stopReason !== 'end_turn') throw new Error(`direct run stopped with ${end.stopReason}`);
  child.stdin.end();
  await exited;
  return text;
}

/**
 * Extra env for a bench's hub daemon: BENCH_HUB_NODE_OPTIONS becomes its NODE_OPTIONS (e.g. "--cpu-prof
 * --cpu-prof-dir=/tmp/prof" to profile the hub alone; agent children never inherit NODE_OPTIONS).
 */
export function hubEnv(): NodeJS.ProcessEnv {
  return process.env.BENCH_HUB_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_HUB_NODE_OPTIONS } : {};
}

/** A hub (under hubEnv) serving `roots` with the scripted ACP agent as its one agent, and caller alice connected to it. */
export async function scriptedHub(
  cleanup: Cleanup,
  dir: string,
  roots: string[],
): Promise<{ hub: RunningHub; client: Client }> {
  const hub = await startHub(
    cleanup,
    { dir, roots, agents: { bench: { kind: 'acp', command: SCRIPTED_AGENT_COMMAND } } },
    hubEnv(),
  );
  return { hub, client: await connectCaller(cleanup, hub, 'alice') };
}

let keys = 0;

/**
 * One delegation through the hub as a client following the tool descriptions makes it: agent_run → agent_wait until
 * terminal → the answer from that last view when it is whole (`result.complete`, rule: whole-preview), else
 * agent_result (first page).
 */
export async function delegate(
  client: Client,
  prompt: string,
  cwd: string,
  agent?: string,
): Promise<{ taskId: string; text: string }> {
  const run = await call<{ taskId: string; nextCursor: number }>(client, 'agent_run', {
    prompt,
    cwd,
    idempotencyKey: `bench-${process.pid}-${++keys}`,
    ...(agent ? { agent } : {}),
  });
  // As the tool description asks: the first wait starts after what the run's answer already showed.
  const end = await followToEnd(client, run.taskId, run.nextCursor);
  if (end.state !== 'succeeded') throw new Error(`task ${run.taskId} ended ${end.state}`);
  const whole = end.last.result as { preview: string; complete: boolean } | null;
  if (whole?.complete) return { taskId: run.taskId, text: whole.preview };
  const result = await call<{ text: string }>(client, 'agent_result', { taskId: run.taskId });
  return { taskId: run.taskId, text: result.text };
}

export function expectText(got: string, want: string): void {
  if (got !== want) throw new Error(`unexpected answer ${JSON.stringify(got.slice(0, 80))}`);
}
