// What each session was started with (cwd, sandbox, model, effort, sub-agents), kept next to Codex's own thread store
// in the isolated home, so a `codex-reply` inherits them, also after a bridge restart (rule: codex-provider).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox } from '../../../agents/agent.ts';
import { writePrivateFile } from '../../../lib/private-fs.ts';

/** Records kept; the oldest are dropped first (their threads then cannot be replied to through baton). */
export const MAX_THREAD_RECORDS = 4_096;
const FILE = 'baton-threads.json';

export interface ThreadRecord {
  cwd: string;
  sandbox: Sandbox;
  model: string;
  effort: string;
  allowSubagents: boolean;
}

export class ThreadRecords {
  private readonly path: string;

  constructor(homeDir: string) {
    this.path = join(homeDir, FILE);
  }

  get(threadId: string): ThreadRecord | undefined {
    return this.load().get(threadId);
  }

  /** Re-reads the file each time: another bridge in the same launch directory may have added threads. */
  set(threadId: string, record: ThreadRecord): void {
    const all = this.load();
    all.delete(threadId);
    all.set(threadId, record);
    const kept = [...all].slice(-MAX_THREAD_RECORDS);
    writePrivateFile(this.path, JSON.stringify(Object.fromEntries(kept)));
  }

  private load(): Map<string, ThreadRecord> {
    try {
      const parsed: unknown = JSON.parse(readFileSync(this.path, 'utf8'));
      if (parsed && typeof parsed === 'object') return new Map(Object.entries(parsed as Record<string, ThreadRecord>));
    } catch {}
    return new Map();
  }
}
