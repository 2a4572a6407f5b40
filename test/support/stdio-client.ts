// A baton stdio server (a provider, the attach face) spawned under the official MCP SDK client: v2 at either protocol
// era (2026-07-28 stateless requests after `server/discover`, or the 2025 `initialize` handshake), or v1, because
// users run both SDK generations.
import { Client, type ClientCapabilities } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/**
 * The protocol the v2 client speaks: pinned to 2026-07-28 (no fallback), the plain 2025 `initialize`, or `auto` (probe
 * with `server/discover`, fall back to `initialize`), as a 2026-07-28 client meets a server it does not know.
 */
export type ClientEra = '2025' | '2026-07-28' | 'auto';

export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

export interface StdioClient {
  client: Client;
  transport: StdioClientTransport;
  stderr(): string;
  /** Resolves once the server answers a request: ping on 2025; tools/list on 2026-07-28, which removed ping. */
  responsive(): Promise<void>;
  close(): Promise<void>;
}

export interface StdioClientOptions {
  capabilities?: ClientCapabilities;
  /** Runs before connect (request handlers for server→client requests, notification handlers). */
  configure?: (client: Client) => void;
}

/**
 * The SDK's stdio transport, probing in place: the SDK runs the `server/discover` probe of its base transport on a
 * throw-away sibling process, while a subclass probes on the connection itself, as Claude Code does (and the process
 * under test is the one that answered).
 */
class InPlaceStdioClientTransport extends StdioClientTransport {}

export async function spawnStdioClient(
  launch: Launch,
  era: ClientEra = '2026-07-28',
  opts: StdioClientOptions = {},
): Promise<StdioClient> {
  const transport =
    era === '2025'
      ? new StdioClientTransport({ ...launch, stderr: 'pipe' })
      : new InPlaceStdioClientTransport({ ...launch, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const client = new Client(
    { name: 'baton-test', version: '0' },
    {
      ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
      ...(era === '2026-07-28' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
      ...(era === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}),
    },
  );
  opts.configure?.(client);
  await client.connect(transport);
  const wanted = era === '2026-07-28' ? 'modern' : era === '2025' ? 'legacy' : client.getProtocolEra();
  if (client.getProtocolEra() !== wanted) {
    await client.close();
    throw new Error(`the client negotiated the ${client.getProtocolEra()} era, not ${wanted}`);
  }
  return {
    client,
    transport,
    stderr: () => stderr,
    responsive: async () => {
      if (client.getProtocolEra() === 'legacy') await client.ping();
      else await client.listTools(undefined, { cacheMode: 'bypass' });
    },
    close: () => client.close(),
  };
}

export interface V1StdioClient {
  client: V1Client;
  transport: V1StdioClientTransport;
  stderr(): string;
  close(): Promise<void>;
}

/** The same server under the SDK v1 client (2025 protocol), as clients built on SDK 1.x still connect. */
export async function spawnV1StdioClient(launch: Launch): Promise<V1StdioClient> {
  // Loaded on use: most files that take this module never start a v1 client, and the import costs ~0.1 CPU s.
  const [{ Client: V1Client }, { StdioClientTransport: V1StdioClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
  ]);
  const transport = new V1StdioClientTransport({ ...launch, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const client = new V1Client({ name: 'baton-test-v1', version: '0' });
  await client.connect(transport);
  return { client, transport, stderr: () => stderr, close: () => client.close() };
}

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

export interface RpcAnswer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/**
 * A 2026-07-28 requester of the MCP Tasks extension on a stdio server, over the SDK v2 stdio transport: the SDK v2
 * Client refuses a `resultType: "task"` answer (it has no requester side of the extension), so this sends the JSON-RPC
 * requests itself, each with the per-request envelope, declaring the extension unless `negotiate` is false.
 */
export class StdioTasksRequester {
  private readonly pending = new Map<number, (answer: RpcAnswer) => void>();
  private nextId = 1;

  readonly transport: StdioClientTransport;

  private constructor(transport: StdioClientTransport) {
    this.transport = transport;
    transport.onmessage = (message) => {
      const m = message as { id?: number } & RpcAnswer;
      if (typeof m.id === 'number' && (m.result || m.error)) this.pending.get(m.id)?.(m);
    };
  }

  /** Spawns the server and opens the connection with `server/discover`. */
  static async open(launch: Launch): Promise<StdioTasksRequester> {
    const r = new StdioTasksRequester(new StdioClientTransport({ ...launch, stderr: 'pipe' }));
    r.transport.stderr?.on('data', () => {});
    await r.transport.start();
    const discovered = await r.request('server/discover');
    if (!discovered.result) throw new Error(`server/discover failed: ${discovered.error?.message}`);
    return r;
  }

  request(method: string, params: Record<string, unknown> = {}, negotiate = true): Promise<RpcAnswer> {
    const id = this.nextId++;
    const answer = new Promise<RpcAnswer>((resolve) => this.pending.set(id, resolve));
    const _meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': negotiate ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
      'io.modelcontextprotocol/clientInfo': { name: 'stdio-tasks-requester', version: '0' },
    };
    void this.transport.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta } });
    return answer.finally(() => this.pending.delete(id));
  }

  /** tasks/get until `done` holds (each tasks/get is a long-poll on the server), within `budgetMs`. */
  async until(
    taskId: string,
    done: (task: Record<string, unknown>) => boolean,
    budgetMs = 120_000,
  ): Promise<Record<string, unknown>> {
    const end = Date.now() + budgetMs;
    for (;;) {
      const got = await this.request('tasks/get', { taskId });
      if (got.error) throw new Error(`tasks/get ${taskId}: ${got.error.message}`);
      if (done(got.result!)) return got.result!;
      if (Date.now() > end) throw new Error(`task ${taskId} did not get there within ${budgetMs} ms`);
    }
  }

  close(): Promise<void> {
    return this.transport.close();
  }
}
