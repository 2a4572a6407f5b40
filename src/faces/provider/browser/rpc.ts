// The vocabulary the browser proxy's parts share: ids (1 and "1" differ), frame shapes, error codes, and the
// channel back to the MCP client that the downstream manager and the lease manager answer through.
import type { ChildGroup } from '../../../lib/process-group.ts';

export type RpcId = string | number;

export interface RpcMessage {
  id?: unknown;
  method?: unknown;
  params?: unknown;
  result?: unknown;
  error?: unknown;
}

export const JSONRPC_INTERNAL_ERROR = -32603;
export const JSONRPC_INVALID_REQUEST = -32600;

export const NEWLINE = Buffer.from('\n');

export function asRpcId(v: unknown): RpcId | undefined {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? v : undefined;
}

/** Distinguishes 1 from "1", as JSON-RPC does. */
export function idKey(id: RpcId): string {
  return JSON.stringify(id);
}

/** One leased remote browser, reached through a local CDP port. */
export interface Lease {
  generation: string;
  port: number;
  browserUrl: string;
  browserId?: string;
  statusCheck?: Promise<number | null>;
}

/** A client `tools/call`: it runs against the browser lease it was dispatched under. */
export interface BrowserCall {
  id: RpcId;
  key: string;
  raw: Buffer;
  /** The lease generation the call was dispatched under. */
  lease?: Lease;
}

/** A client request some downstream process owes an answer to. */
export interface PendingRequest {
  kind: 'browser' | 'other';
  id: RpcId;
  key: string;
  raw: Buffer;
  call?: BrowserCall;
}

/** How the proxy's parts reach the client and the proxy's lifecycle. */
export interface ProxyIo {
  shuttingDown(): boolean;
  writeClient(raw: Buffer): void;
  replyError(id: RpcId | null, code: number, message: string): void;
  replyToolError(id: RpcId, content: string[], structured: Record<string, unknown>): void;
  /** Every child group the proxy started, so shutdown can reap them all. */
  track(group: ChildGroup, running: boolean): void;
}
