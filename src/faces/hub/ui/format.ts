// One readable line per task event and per git snapshot, shared by `baton tasks` and the dashboard (rules:
// tasks-command, dashboard). Agent text is untrusted: terminal controls are stripped here; HTML escaping is the page's
// job.
import type { TaskEvent } from '../../../core/task.ts';
import { compareCodeUnits, cutCodePoints, stripTerminalControls } from '../../../lib/chars.ts';

const str = (v: unknown) => (typeof v === 'string' ? stripTerminalControls(v) : v === undefined ? '' : String(v));

/** What happened in one event, without its time and round. */
export function eventText(ev: TaskEvent): string {
  switch (ev.kind) {
    case 'lifecycle':
      return [
        str(ev.state),
        ev.by === 'operator' ? 'by the operator' : '',
        ev.abandoned ? '(abandoned)' : '',
        ev.error ? `— ${str(ev.error)}` : '',
      ]
        .filter(Boolean)
        .join(' ');
    case 'session':
      return str(ev.sessionId);
    case 'status':
    case 'commentary':
      return str(ev.text);
    case 'tool':
      return `${str(ev.family)} ${str(ev.phase)}${ev.ok === undefined ? '' : ev.ok ? ' ok' : ' failed'}`;
    case 'permission':
      return `${str(ev.decision)}: ${str(ev.what)}`;
    case 'error':
      return str(ev.message);
    case 'message':
      // A status page gives streamed text only as its length (rule: event-pages); a wait page gives the text.
      if (typeof ev.text === 'string') return str(ev.text);
      return `(${typeof ev.chars === 'number' ? ev.chars : '?'} characters of the answer)${ev.capped ? ' capped' : ''}`;
    default: {
      // Usage, cancel requests and kinds an older or newer store holds: their text, or else their fields.
      const { seq: _s, time: _t, round: _r, kind: _k, ...rest } = ev as TaskEvent & Record<string, unknown>;
      if (ev.kind !== 'usage' && typeof rest.text === 'string') return str(rest.text);
      return Object.entries(rest)
        .map(([k, v]) => `${k}=${str(typeof v === 'object' ? JSON.stringify(v) : v)}`)
        .join(' ');
    }
  }
}

export interface GitSnapshotView {
  git: boolean;
  reason?: string;
  head?: string | null;
  branch?: string | null;
  dirty?: { path: string; status: string }[];
  dirtyCount?: number;
  diffstat?: { files: number; insertions: number; deletions: number };
}

/** `branch@abc1234, 3 dirty (2 files +10 -4)` or why there is no snapshot. */
export function gitLine(snap: unknown): string {
  const s = snap as GitSnapshotView | null | undefined;
  if (!s) return 'no snapshot';
  if (!s.git) return `not git (${str(s.reason)})`;
  const head = s.head ? s.head.slice(0, 12) : 'no commit';
  const d = s.diffstat;
  const stat = d ? ` (${d.files} files +${d.insertions} -${d.deletions})` : '';
  return `${s.branch ? `${str(s.branch)}@` : ''}${head}, ${s.dirtyCount ?? 0} dirty${stat}`;
}

const GIT_STATUS_WORDS: Record<string, string> = {
  '?': 'untracked',
  M: 'modified',
  A: 'added',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  U: 'conflicted',
  T: 'type changed',
  '!': 'ignored',
};

/** `modified (M)` for a porcelain status code; `clean` stays as it is. */
export function gitStatusWord(code: string): string {
  const word = GIT_STATUS_WORDS[code.trim()[0] ?? ''];
  return word ? `${word} (${code})` : code;
}

/** Dirty paths whose status differs between the snapshots: what the round changed in the work tree. */
export function gitChanges(before: unknown, after: unknown): { path: string; before: string; after: string }[] {
  const files = (s: unknown) =>
    new Map(((s as GitSnapshotView | null)?.dirty ?? []).map((f) => [f.path, f.status] as const));
  const b = files(before);
  const a = files(after);
  const out: { path: string; before: string; after: string }[] = [];
  for (const path of new Set([...b.keys(), ...a.keys()])) {
    const was = b.get(path) ?? 'clean';
    const now = a.get(path) ?? 'clean';
    if (was !== now) out.push({ path: str(path), before: was, after: now });
  }
  return out.sort((x, y) => compareCodeUnits(x.path, y.path));
}

/** Whitespace folded to single spaces and cut to `max` code points (never half a surrogate pair), with … when cut. */
export function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  const cut = cutCodePoints(flat, max);
  return cut.length < flat.length ? `${cut}…` : flat;
}
