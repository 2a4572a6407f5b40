// The standalone attach server (`baton attach`, rule `attach-library`): the nine attach tools over stdio on MCP SDK v2,
// whose stdio entry serves both protocol eras (2026-07-28 after `server/discover`, or the 2025 `initialize`). It owns
// only its entry, transport and stdin close handling; tool resources belong to the registrar.
import type { Readable, Writable } from 'node:stream';
import { Server } from '@modelcontextprotocol/server';
import { type StdioServerHandle, StdioServerTransport, serveStdio } from '@modelcontextprotocol/server/stdio';
import { redactedError } from '../../lib/redact.ts';
import { BATON_VERSION } from '../../version.ts';
import { serveTools } from '../mcp-tools.ts';
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
  private readonly stdin: Readable;
  private readonly stdout: Writable;
  private entry: StdioServerHandle | undefined;
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
    this.stdin = opts.stdin ?? process.stdin;
    this.stdout = opts.stdout ?? process.stdout;
    this.closedPromise = new Promise((r) => {
      this.markClosed = r;
    });
  }

  /** Serves the tools on stdio; one-shot. Closing stdin closes the server. */
  async start(): Promise<void> {
    if (this.started) throw new Error('CrossHarnessMcpServer.start() may be called only once');
    this.started = true;
    // This server is ours alone: invalid arguments become JSON-RPC -32602 errors instead of tool results (rule:
    // strict-inputs).
    const tools = this.registrar.strictTools(() => !this.serverClosed);
    const transport = new StdioServerTransport(this.stdin, this.stdout);
    // One instance per era the entry opens (a 2026-07-28 probe the client abandons for `initialize` is closed again).
    this.entry = serveStdio(
      () => {
        const server = new Server({ name: 'baton-attach', version: BATON_VERSION }, { capabilities: { tools: {} } });
        serveTools(server, tools);
        return server;
      },
      {
        transport,
        onerror: (err) => process.stderr.write(`[baton] attach: ${redactedError(err).message}\n`),
      },
    );
    // The entry owns the transport's callbacks; chained so that a transport that closed itself counts as closed.
    const entryOnClose = transport.onclose;
    transport.onclose = () => {
      entryOnClose?.();
      this.serverClosed = true;
    };
    this.stdin.once('end', this.onStdinEnd);
    this.stdin.once('close', this.onStdinEnd);
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
        await this.entry?.close();
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
