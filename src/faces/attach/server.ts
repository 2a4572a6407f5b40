// The standalone attach server (`baton attach`, rule `attach-library`): one McpServer over stdio carrying the nine
// attach tools. It owns only its server, transport and stdin close handling; tool resources belong to the registrar.
import type { Readable, Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { redactedError } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import { checkedCallRequest, RawCallToolRequestSchema } from '../mcp-tools.ts';
import { allowlistFromEnv } from './allowlist.ts';
import { ConnectionRegistry } from './connections.ts';
import { CrossHarnessMcpToolRegistrar } from './tools.ts';

export interface CrossHarnessMcpServerOptions {
  /** Approved origins; defaults to BATON_ALLOWED_SERVER_URLS / CROSSHARNESS_ALLOWED_SERVER_URLS. */
  allowedServerUrls?: readonly string[];
  /** Where credentials and the allowlist are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  stdin?: Readable;
  stdout?: Writable;
  /** A registrar to use instead of one built from the environment. */
  registrar?: CrossHarnessMcpToolRegistrar;
}

export class CrossHarnessMcpServer {
  readonly registrar: CrossHarnessMcpToolRegistrar;
  private readonly server: McpServer;
  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private transport: StdioServerTransport | undefined;
  private started = false;
  private serverClosed = false;
  private closing: Promise<void> | undefined;
  private readonly closedPromise: Promise<void>;
  private markClosed!: () => void;

  constructor(opts: CrossHarnessMcpServerOptions = {}) {
    const env = opts.env ?? process.env;
    this.registrar =
      opts.registrar ??
      new CrossHarnessMcpToolRegistrar(
        new ConnectionRegistry({ allowedServerUrls: opts.allowedServerUrls ?? allowlistFromEnv(env), env }),
      );
    this.server = new McpServer({ name: 'baton-attach', version: BATON_VERSION });
    this.stdin = opts.stdin ?? process.stdin;
    this.stdout = opts.stdout ?? process.stdout;
    this.closedPromise = new Promise((r) => {
      this.markClosed = r;
    });
  }

  /** Registers the tools and serves stdio; one-shot. Closing stdin closes the server. */
  async start(): Promise<void> {
    if (this.started) throw new Error('CrossHarnessMcpServer.start() may be called only once');
    this.started = true;
    this.registrar.register(this.server);
    // This server is ours alone: invalid arguments become JSON-RPC -32602 errors instead of tool results (rule:
    // strict-inputs).
    this.server.server.removeRequestHandler('tools/call');
    const strict = this.registrar.strictCallHandler();
    this.server.server.setRequestHandler(RawCallToolRequestSchema, (raw, extra) =>
      strict(checkedCallRequest(raw), extra),
    );
    this.transport = new StdioServerTransport(this.stdin, this.stdout);
    this.server.server.onclose = () => {
      this.serverClosed = true;
    };
    this.stdin.once('end', this.onStdinEnd);
    this.stdin.once('close', this.onStdinEnd);
    await this.server.connect(this.transport);
  }

  /** Resolves once close() has fully succeeded. */
  get closed(): Promise<void> {
    return this.closedPromise;
  }

  /**
   * Closes the server (and its transport) first, then the registrar. A failed step keeps its resources for the next
   * close(); failures of both are reported together as an AggregateError.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce().finally(() => {
      this.closing = undefined;
    });
    return this.closing;
  }

  private readonly onStdinEnd = () => {
    this.close().catch((err) => {
      process.stderr.write(`[baton] attach: cleanup failed: ${redactedError(err).message}\n`);
    });
  };

  private async closeOnce(): Promise<void> {
    const failures: unknown[] = [];
    if (!this.serverClosed) {
      try {
        await this.server.close();
        this.serverClosed = true;
        this.stdin.off('end', this.onStdinEnd);
        this.stdin.off('close', this.onStdinEnd);
      } catch (err) {
        failures.push(redactedError(err));
      }
    }
    try {
      await this.registrar.close();
    } catch (err) {
      failures.push(redactedError(err));
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'closing the attach server failed');
    this.markClosed();
  }
}
