// A 2026-07-28 requester of the MCP Tasks extension over the official SDK v2 client transport. The SDK v2 Client
// itself refuses a `resultType: "task"` answer (it ships no requester side of the extension), so this sends the
// JSON-RPC requests through its StreamableHTTPClientTransport with the per-request envelope a Tasks-aware client sends.
import type { TestContext } from 'node:test';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type RunningHub, TEST_CALLERS } from './hub.ts';

export const TASKS = 'io.modelcontextprotocol/tasks';

export interface RpcAnswer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

export class TasksRequester {
  private readonly transport: StreamableHTTPClientTransport;
  private readonly pending = new Map<number, (answer: RpcAnswer) => void>();
  private nextId = 1;
  /** Whether requests declare the extension in their per-request client capabilities. */
  private readonly negotiate: boolean;
  /** Further per-request client capabilities (elicitation, for one). */
  private readonly caps: Record<string, unknown>;

  private constructor(url: URL, token: string, negotiate: boolean, caps: Record<string, unknown>) {
    this.negotiate = negotiate;
    this.caps = caps;
    this.transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    this.transport.onmessage = (message) => {
      const m = message as { id?: number; result?: Record<string, unknown>; error?: RpcAnswer['error'] };
      if (typeof m.id === 'number' && (m.result || m.error)) this.pending.get(m.id)?.(m);
    };
  }

  static async open(
    t: Pick<TestContext, 'after'>,
    hub: Pick<RunningHub, 'url'>,
    caller: string,
    negotiate = true,
    caps: Record<string, unknown> = {},
  ): Promise<TasksRequester> {
    const token = TEST_CALLERS[caller as keyof typeof TEST_CALLERS];
    const r = new TasksRequester(new URL(`${hub.url}/mcp/${caller}`), token, negotiate, caps);
    await r.transport.start();
    t.after(() => r.transport.close().catch(() => {}));
    return r;
  }

  /** One request; resolves with its JSON-RPC result or error. */
  request(method: string, params: Record<string, unknown> = {}): Promise<RpcAnswer> {
    const id = this.nextId++;
    const answer = new Promise<RpcAnswer>((resolve) => this.pending.set(id, resolve));
    const _meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': {
        ...this.caps,
        ...(this.negotiate ? { extensions: { [TASKS]: {} } } : {}),
      },
      'io.modelcontextprotocol/clientInfo': { name: 'tasks-requester', version: '1.0.0' },
    };
    void this.transport.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta } });
    return answer.finally(() => this.pending.delete(id));
  }

  /** tasks/get until the task leaves "working" (each poll is a long-poll on the hub). */
  async until(taskId: string, done: (task: Record<string, unknown>) => boolean, budgetMs = 120_000) {
    const end = Date.now() + budgetMs;
    for (;;) {
      const got = await this.request('tasks/get', { taskId });
      if (got.error) throw new Error(`tasks/get ${taskId}: ${got.error.message}`);
      if (done(got.result!)) return got.result!;
      if (Date.now() > end) throw new Error(`timed out after ${budgetMs}ms waiting for task ${taskId}`);
    }
  }
}
