// What the attach face needs from a running harness server, whatever its wire protocol. One implementation per
// harness (OpenCode over HTTP, Codex over the app-server WebSocket); the registries and tools only see this.
import type { HarnessName } from './allowlist.ts';

export interface HarnessHealth {
  healthy: boolean;
  version?: string;
  /** Why the connection is unusable, when it is. */
  detail?: string;
}

export interface ChatSummary {
  chatId: string;
  title: string;
  directory: string;
  createdAt?: string;
  updatedAt?: string;
}

export interface ChatMessage {
  id: string;
  role: 'user' | 'assistant';
  createdAt?: string;
  /** Visible text only: never hidden reasoning. */
  text: string;
  /** Tool calls by name and state, without arguments or outputs. */
  tools?: { name: string; status: string }[];
  error?: string;
}

export interface ChatTranscript {
  chatId: string;
  title: string;
  directory: string;
  messages: ChatMessage[];
  /** True when older messages were left out to keep the result bounded. */
  truncated: boolean;
}

export interface SendReply {
  chatId: string;
  /** The harness's id for the reply (message or turn id) when it reported one. */
  replyId?: string;
  reply: string;
}

export interface SendOptions {
  /** Covers validation, queueing and the harness request (rule: attach-tools). */
  timeoutMs: number;
  /** The caller's cancellation: aborts the request (OpenCode) or interrupts the correlated turn (Codex). */
  signal?: AbortSignal;
}

/** A send admitted before anything is delivered, so a refusal can happen before a dispatch record exists. */
export interface SendPermit {
  run(message: string, opts: SendOptions): Promise<SendReply>;
  /** Gives the admission back when the send will never run. */
  cancel(): void;
}

export interface HarnessConnection {
  readonly harness: HarnessName;
  health(signal?: AbortSignal): Promise<HarnessHealth>;
  listChats(limit: number, signal?: AbortSignal): Promise<ChatSummary[]>;
  readChat(chatId: string, signal?: AbortSignal): Promise<ChatTranscript>;
  send(chatId: string, message: string, opts: SendOptions): Promise<SendReply>;
  /** Admits a send synchronously (throws when the harness's queue bounds refuse it); run() then delivers it. */
  prepareSend?(chatId: string): SendPermit;
  /** Releases the connection; rejects when cleanup could not be confirmed (the registry then keeps it for a retry). */
  close(): Promise<void>;
}

/** Credentials a connection may use; only ever built by the registry from env or injected values. */
export interface HarnessCredentials {
  openCode?: { username: string; password: string };
  codexToken?: string;
}

export interface ConnectRequest {
  harness: HarnessName;
  /** Canonical approved origin with a trailing slash. */
  origin: string;
  directory: string;
  credentials: HarnessCredentials;
  signal?: AbortSignal;
}

/** Opens (and verifies) a connection to an approved server; rejects when the server cannot be reached. */
export type HarnessConnector = (request: ConnectRequest) => Promise<HarnessConnection>;

export class SendTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SendTimeoutError';
  }
}
