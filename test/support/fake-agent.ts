// A FAKE in-process agent for engine unit tests only (the real adapters are tested against real binaries).
// Each prompt is a directive: `reply <text>`, `hold` (until cancelled, then acknowledges), `ignore-cancel`,
// `fail <msg>`, `gate <name>` (waits for the test to open it), `status-gate <name>` (after the gate one status event,
// then holds), `big` (an oversized answer), `spawn` (starts a real process group and holds), `events`
// (status/tool/permission/commentary/usage then a reply), `silent` (never emits). `opening` holds every session's
// start (and so its session record) until the test opens it.
import type { Agent, AgentEvent, AgentSession, OpenSessionOptions } from '../../src/agents/agent.ts';
import { type ChildGroup, spawnGroup } from '../../src/lib/process-group.ts';
import { Gate } from '../mock-models/server.ts';

export class FakeAgent implements Agent {
  readonly kind = 'fake';
  readonly name: string;
  readonly opened: OpenSessionOptions[] = [];
  readonly gates = new Map<string, Gate>();
  /** Directories with a running turn right now, and the most seen at once per directory. */
  readonly running = new Map<string, number>();
  maxConcurrentPerDir = new Map<string, number>();
  maxConcurrent = 0;
  /** When set, openSession waits for it: the task is running but its session not yet recorded. */
  opening: Gate | undefined;
  /** Called as each turn starts, before its first event: what the hub has stored by the time the agent works. */
  onTurn: ((cwd: string) => void) | undefined;
  private active = 0;
  private nextSession = 1;

  constructor(name = 'fake') {
    this.name = name;
  }

  gate(name: string): Gate {
    let g = this.gates.get(name);
    if (!g) {
      g = new Gate();
      this.gates.set(name, g);
    }
    return g;
  }

  async probe() {
    return { name: this.name, kind: this.kind, available: true, version: '0.0.0-fake' };
  }

  async openSession(opts: OpenSessionOptions): Promise<AgentSession> {
    this.opened.push(opts);
    await this.opening?.promise;
    const id = opts.resume ?? `fake-session-${this.nextSession++}`;
    let group: ChildGroup | undefined;
    let closed = false;
    let onClose: (() => void) | undefined;
    const closedPromise = new Promise<void>((r) => {
      onClose = r;
    });
    const agent = this;
    return {
      id,
      async *turn(prompt, { signal }): AsyncIterable<AgentEvent> {
        const [cmd, ...rest] = prompt.split(' ');
        const arg = rest.join(' ');
        agent.onTurn?.(opts.cwd);
        agent.enter(opts.cwd);
        try {
          yield { kind: 'session', id };
          switch (cmd) {
            case 'reply':
              yield { kind: 'message', text: arg };
              yield { kind: 'end', outcome: 'succeeded' };
              return;
            case 'fail':
              yield { kind: 'end', outcome: 'failed', error: arg };
              return;
            case 'big':
              yield { kind: 'message', text: 'x'.repeat(6 * 1024 * 1024) };
              yield { kind: 'message', text: 'y'.repeat(6 * 1024 * 1024) };
              yield { kind: 'end', outcome: 'succeeded' };
              return;
            case 'events':
              yield { kind: 'status', text: 'step\u001b[31m one\n\n   two' };
              yield { kind: 'tool', phase: 'start', family: 'command' };
              yield { kind: 'tool', phase: 'end', family: 'command', ok: true };
              yield { kind: 'permission', decision: 'denied', what: 'write outside the workspace' };
              yield { kind: 'commentary', text: 'looking at the tests' };
              yield { kind: 'usage', inputTokens: 10, outputTokens: 5 };
              yield { kind: 'message', text: 'done' };
              yield { kind: 'end', outcome: 'succeeded' };
              return;
            case 'gate':
              await Promise.race([agent.gate(arg).promise, aborted(signal)]);
              if (signal.aborted) {
                yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
                return;
              }
              yield { kind: 'message', text: `gate ${arg} passed` };
              yield { kind: 'end', outcome: 'succeeded' };
              return;
            case 'status-gate':
              await Promise.race([agent.gate(arg).promise, aborted(signal)]);
              yield { kind: 'status', text: `past gate ${arg}` };
              await aborted(signal);
              yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
              return;
            case 'spawn':
              group = spawnGroup('sleep', ['300'], { stdio: 'ignore' });
              opts.onProcessGroup?.(group.pgid);
              yield { kind: 'status', text: `spawned ${group.pgid}` };
              await Promise.race([aborted(signal), closedPromise]);
              yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
              return;
            case 'hold':
              await aborted(signal);
              yield { kind: 'end', outcome: 'cancelled', acknowledged: true };
              return;
            case 'ignore-cancel':
            case 'silent':
              await closedPromise;
              yield { kind: 'end', outcome: 'failed', error: 'the agent process was stopped' };
              return;
            default:
              yield { kind: 'end', outcome: 'failed', error: `unknown directive ${cmd}` };
          }
        } finally {
          agent.leave(opts.cwd);
        }
      },
      async close() {
        if (closed) return;
        closed = true;
        onClose?.();
        if (group) await group.stop(1_000);
      },
    };
  }

  private enter(dir: string) {
    this.active++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.active);
    const n = (this.running.get(dir) ?? 0) + 1;
    this.running.set(dir, n);
    this.maxConcurrentPerDir.set(dir, Math.max(this.maxConcurrentPerDir.get(dir) ?? 0, n));
  }

  private leave(dir: string) {
    this.active--;
    this.running.set(dir, (this.running.get(dir) ?? 1) - 1);
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((r) => signal.addEventListener('abort', () => r(), { once: true }));
}
