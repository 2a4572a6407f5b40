// The connection registry (rules: exact-origins, env-only-credentials, retryable-disconnect, attach-library): one
// connection per (harness, origin, directory), at most 32, credentials only from the environment or an injected value
// bound to its exact origin, closes that fail closed and can be retried.
import { randomUUID } from 'node:crypto';
import { isAbsolute as isPosixAbsolute, normalize as normalizePosix } from 'node:path/posix';
import { redactedError, registerSecret } from '../../lib/redact.ts';
import { approveServerUrl, canonicalOrigin, type HarnessName, isLoopbackHost, isPlainText } from './allowlist.ts';
import { AttachError, withRedaction } from './errors.ts';
import type {
  ChatSummary,
  ChatTranscript,
  HarnessConnection,
  HarnessConnector,
  HarnessCredentials,
  HarnessHealth,
  SendOptions,
  SendPermit,
  SendReply,
} from './harness.ts';

export const MAX_CONNECTIONS = 32;
export const MAX_DIRECTORY_LENGTH = 4_096;
export const DEFAULT_OPENCODE_USERNAME = 'opencode';

export const HARNESSES = ['opencode', 'codex', 'claude-code'] as const;

export const CLAUDE_CODE_REFUSAL =
  'Claude Code cannot be connected: it exposes no URL-addressable session server (its CLI and Agent SDK are local ' +
  'process interfaces). Connect an OpenCode (http/https) or Codex app-server (ws/wss) server instead.';

export interface OpenCodeCredentialsInput {
  serverUrl: string;
  username?: string;
  password: string;
}

export interface ConnectionRegistryOptions {
  /** Exact approved origins; connect() refuses everything else. */
  allowedServerUrls: readonly string[];
  /** A password owned by the embedding application, used only for its exact serverUrl. */
  openCodeCredentials?: OpenCodeCredentialsInput;
  /** Where the fixed credential variables are read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Per-harness connectors; the defaults speak OpenCode's HTTP API and Codex's app-server protocol. */
  connectors?: Partial<Record<HarnessName, HarnessConnector>>;
}

export type ConnectionState = 'open' | 'closing' | 'close_failed';

/** Connection metadata: what a caller may see. Never credentials. */
export interface ConnectionInfo {
  connectionId: string;
  harness: HarnessName;
  serverUrl: string;
  directory: string;
  connectedAt: string;
  state: ConnectionState;
}

interface Entry {
  info: ConnectionInfo;
  key: string;
  connection: HarnessConnection;
  closing?: Promise<void>;
}

/** A usable handle on one open connection; every call fails once a close has started. */
export interface Connection {
  readonly connectionId: string;
  readonly harness: HarnessName;
  info(): ConnectionInfo;
  health(signal?: AbortSignal): Promise<HarnessHealth>;
  listChats(limit: number, signal?: AbortSignal): Promise<ChatSummary[]>;
  readChat(chatId: string, signal?: AbortSignal): Promise<ChatTranscript>;
  send(chatId: string, message: string, opts: SendOptions): Promise<SendReply>;
  /** Admits a send now (or throws, nothing sent); the returned permit delivers it later. */
  prepareSend(chatId: string): SendPermit;
}

/** Server directories are absolute, normalised paths (POSIX, or a Windows drive path for Windows servers). */
export function validateDirectory(directory: string): string {
  if (typeof directory !== 'string' || directory.length === 0) throw new AttachError('directory is empty');
  if (directory.length > MAX_DIRECTORY_LENGTH)
    throw new AttachError(`directory is longer than ${MAX_DIRECTORY_LENGTH} characters`);
  if (/[\u0000-\u001f]/.test(directory)) throw new AttachError('directory contains control characters');
  if (/^[A-Za-z]:\\/.test(directory)) return directory;
  if (!isPosixAbsolute(directory)) throw new AttachError('directory must be an absolute path on the server');
  const normal = normalizePosix(directory);
  const expected = normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
  if (expected !== directory)
    throw new AttachError(`directory must be normalised (no "..", "." or trailing "/"); did you mean ${expected}?`);
  return directory;
}

export class ConnectionRegistry {
  private readonly allowed: ReadonlySet<string>;
  private readonly injected: { origin: string; username: string; password: string } | undefined;
  private readonly env: NodeJS.ProcessEnv;
  private readonly connectors: Partial<Record<HarnessName, HarnessConnector>>;
  private readonly entries = new Map<string, Entry>();
  private readonly reserved = new Set<string>();
  private closed = false;

  constructor(opts: ConnectionRegistryOptions) {
    this.allowed = new Set(opts.allowedServerUrls.map((u) => canonicalOrigin(u)));
    this.env = opts.env ?? process.env;
    this.connectors = { ...opts.connectors };
    const c = opts.openCodeCredentials;
    if (c) {
      if (typeof c.password !== 'string' || c.password.length === 0)
        throw new AttachError('openCodeCredentials.password must be a non-empty string');
      if (c.username !== undefined && (typeof c.username !== 'string' || c.username.length === 0))
        throw new AttachError('openCodeCredentials.username must be a non-empty string when given');
      const origin = canonicalOrigin(c.serverUrl);
      const url = new URL(origin);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new AttachError('openCodeCredentials.serverUrl must be an http(s) origin');
      if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
        throw new AttachError('openCodeCredentials over plain http are accepted only for loopback hosts; use https://');
      registerSecret(c.password);
      this.injected = { origin, username: c.username ?? DEFAULT_OPENCODE_USERNAME, password: c.password };
    }
  }

  /** Opens a connection after checking harness, origin, directory, credentials, uniqueness and the 32 limit. */
  async connect(harness: string, serverUrl: string, directory: string, signal?: AbortSignal): Promise<ConnectionInfo> {
    if (this.closed) throw new AttachError('the connection registry is closed; start a new one to connect again');
    if (harness === 'claude-code' || harness === 'claude') throw new AttachError(CLAUDE_CODE_REFUSAL);
    if (harness !== 'opencode' && harness !== 'codex')
      throw new AttachError(`unknown harness "${harness}" (use opencode or codex)`);
    const origin = approveServerUrl(harness, serverUrl, this.allowed);
    const dir = validateDirectory(directory);
    const credentials = this.credentialsFor(harness, origin);
    const key = `${harness}\u0000${origin}\u0000${dir}`;
    for (const e of this.entries.values()) {
      if (e.key === key)
        throw new AttachError(
          `a ${harness} connection to ${origin} for ${dir} already exists (${e.info.connectionId}); reuse it or disconnect it first`,
        );
    }
    if (this.reserved.has(key))
      throw new AttachError(`a ${harness} connection to ${origin} for ${dir} is being opened; wait for it to finish`);
    if (this.entries.size + this.reserved.size >= MAX_CONNECTIONS)
      throw new AttachError(`at most ${MAX_CONNECTIONS} connections may be open; disconnect one first`);
    const connector = this.connectors[harness] ?? (await defaultConnector(harness));
    this.reserved.add(key);
    let connection: HarnessConnection;
    try {
      connection = await withRedaction(() => connector({ harness, origin, directory: dir, credentials, signal }));
    } finally {
      this.reserved.delete(key);
    }
    if (this.closed) {
      await connection.close().catch(() => {});
      throw new AttachError('the connection registry was closed while connecting');
    }
    const info: ConnectionInfo = {
      connectionId: `c-${randomUUID()}`,
      harness,
      serverUrl: origin,
      directory: dir,
      connectedAt: new Date().toISOString(),
      state: 'open',
    };
    this.entries.set(info.connectionId, { info, key, connection });
    return { ...info };
  }

  /** Snapshots of every connection this registry holds, including ones whose close failed. */
  list(): ConnectionInfo[] {
    return [...this.entries.values()].map((e) => ({ ...e.info }));
  }

  /** A handle on an open connection; throws for unknown ids and for connections being closed. */
  get(connectionId: string): Connection {
    const entry = this.openEntry(connectionId);
    const guard = <T>(fn: () => Promise<T>) => {
      this.openEntry(connectionId);
      return withRedaction(fn);
    };
    const c = entry.connection;
    return {
      connectionId,
      harness: entry.info.harness,
      info: () => ({ ...entry.info }),
      health: (signal) => guard(() => c.health(signal)),
      listChats: (limit, signal) => guard(() => c.listChats(limit, signal)),
      readChat: (chatId, signal) => guard(() => c.readChat(chatId, signal)),
      send: (chatId, message, opts) => guard(() => c.send(chatId, message, opts)),
      prepareSend: (chatId) => {
        this.openEntry(connectionId);
        let permit: SendPermit;
        try {
          permit = c.prepareSend?.(chatId) ?? { run: (m, o) => c.send(chatId, m, o), cancel: () => {} };
        } catch (err) {
          throw redactedError(err);
        }
        return { run: (m, o) => guard(() => permit.run(m, o)), cancel: () => permit.cancel() };
      },
    };
  }

  /** Metadata of one connection in any state (for connection_status). */
  info(connectionId: string): ConnectionInfo {
    const entry = this.entries.get(connectionId);
    if (!entry) throw unknownConnection(connectionId);
    return { ...entry.info };
  }

  /**
   * Closes one connection (rule: retryable-disconnect). Overlapping calls share the attempt in flight; a failed close
   * keeps the id, in state close_failed, so calling again retries the cleanup.
   */
  disconnect(connectionId: string): Promise<void> {
    const entry = this.entries.get(connectionId);
    if (!entry) return Promise.reject(unknownConnection(connectionId));
    return this.closeEntry(entry);
  }

  /**
   * Closes the registry to new connections for good, then closes every connection, sharing attempts in flight.
   * Failed ones stay for a later retry; one failure is rethrown as is, several as an AggregateError.
   */
  async closeAll(): Promise<void> {
    this.closed = true;
    const results = await Promise.allSettled([...this.entries.values()].map((e) => this.closeEntry(e)));
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} connections failed to close`);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private closeEntry(entry: Entry): Promise<void> {
    if (entry.closing) return entry.closing;
    entry.info.state = 'closing';
    const attempt = (async () => {
      try {
        await withRedaction(() => entry.connection.close());
        this.entries.delete(entry.info.connectionId);
      } catch (err) {
        entry.info.state = 'close_failed';
        throw new AttachError(
          `closing connection ${entry.info.connectionId} failed: ${(err as Error).message}; it is kept, call disconnect again to retry`,
        );
      } finally {
        entry.closing = undefined;
      }
    })();
    entry.closing = attempt;
    return attempt;
  }

  private openEntry(connectionId: string): Entry {
    const entry = this.entries.get(connectionId);
    if (!entry) throw unknownConnection(connectionId);
    if (entry.info.state !== 'open')
      throw new AttachError(
        `connection ${connectionId} is ${entry.info.state === 'closing' ? 'closing' : 'closed after a failed cleanup'}; call disconnect_harness again to retry its cleanup`,
      );
    return entry;
  }

  private credentialsFor(harness: HarnessName, origin: string): HarnessCredentials {
    if (harness === 'opencode') {
      if (this.injected && this.injected.origin === origin)
        return { openCode: { username: this.injected.username, password: this.injected.password } };
      const password = this.env.OPENCODE_SERVER_PASSWORD;
      if (!password)
        throw new AttachError(
          'OPENCODE_SERVER_PASSWORD is not set; start baton attach with the OpenCode server password in its environment',
        );
      if (isPlainText(origin) && !isLoopbackHost(new URL(origin).hostname))
        throw new AttachError(`refusing to send the OpenCode password over plain http to ${origin}; use https://`);
      registerSecret(password);
      return { openCode: { username: this.env.OPENCODE_SERVER_USERNAME || DEFAULT_OPENCODE_USERNAME, password } };
    }
    const token = this.env.CODEX_REMOTE_TOKEN || undefined;
    if (token) {
      if (isPlainText(origin) && !isLoopbackHost(new URL(origin).hostname))
        throw new AttachError(`refusing to send CODEX_REMOTE_TOKEN over plain ws to ${origin}; use wss://`);
      registerSecret(token);
    }
    return { codexToken: token };
  }
}

function unknownConnection(connectionId: string): AttachError {
  return new AttachError(
    `unknown connectionId "${String(connectionId).slice(0, 80)}"; list_connections shows the open ones`,
  );
}

async function defaultConnector(harness: HarnessName): Promise<HarnessConnector> {
  if (harness === 'opencode') return (await import('./opencode-connection.ts')).connectOpenCode;
  return (await import('./codex-connection.ts')).connectCodex;
}
