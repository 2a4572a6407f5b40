// The Codex app-server protocol types that code outside src/codex and src/agents needs, re-exported from the generated
// folder so that generated code has one way in (the layer rules in .dependency-cruiser.cjs).
export type { Thread } from '../generated/codex/v2/Thread.ts';
export type { ThreadItem } from '../generated/codex/v2/ThreadItem.ts';
export type { ThreadListParams } from '../generated/codex/v2/ThreadListParams.ts';
export type { ThreadListResponse } from '../generated/codex/v2/ThreadListResponse.ts';
export type { ThreadReadParams } from '../generated/codex/v2/ThreadReadParams.ts';
export type { ThreadReadResponse } from '../generated/codex/v2/ThreadReadResponse.ts';
export type { ThreadResumeParams } from '../generated/codex/v2/ThreadResumeParams.ts';
export type { Turn } from '../generated/codex/v2/Turn.ts';
export type { TurnInterruptParams } from '../generated/codex/v2/TurnInterruptParams.ts';
export type { TurnStartParams } from '../generated/codex/v2/TurnStartParams.ts';
export type { TurnStartResponse } from '../generated/codex/v2/TurnStartResponse.ts';
