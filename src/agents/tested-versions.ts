// The agent versions baton was tested on, and the one-line verdict on a version found outside them. Each range is
// what the suite ran against (the pinned devDependencies; Codex also its oldest supported release). Older than the
// range: refused, the user upgrades the agent. Newer: baton still drives it and says it was not tested on it, unless
// the release is one known to have changed the protocol baton speaks (`refuseFrom`), which is refused.
import { findVersion } from '../lib/version.ts';

export type TestedAgent = 'codex' | 'claude-code' | 'gemini-cli' | 'opencode';

export interface TestedRange {
  /** The product's name in messages. */
  label: string;
  /** Oldest release tested (inclusive). */
  min: string;
  /** Newest release tested: any patch of this MAJOR.MINOR counts as tested. */
  max: string;
  /** First release known to be incompatible (refused). */
  refuseFrom?: string;
  /** What to install when the version is refused. */
  install: string;
}

export const TESTED_VERSIONS: Record<TestedAgent, TestedRange> = {
  codex: { label: 'Codex', min: '0.153.4', max: '0.171.0', install: 'npm i -g @openai/codex@0.171' },
  'claude-code': {
    label: 'Claude Code',
    min: '2.1.332',
    max: '2.1.332',
    install: 'npm i -g @anthropic-ai/claude-code@2',
  },
  'gemini-cli': { label: 'Gemini CLI', min: '0.61.0', max: '0.61.0', install: 'npm i -g @google/gemini-cli@0.61' },
  opencode: {
    label: 'OpenCode',
    min: '1.18.33',
    max: '1.18.33',
    // 2.x moved its HTTP API under /api with different auth and events; no 2.x could be tested here yet.
    refuseFrom: '2.0.0',
    install: 'npm i -g opencode-ai@1',
  },
};

type Triple = [number, number, number];

function triple(version: string): Triple | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function compare(a: Triple, b: Triple): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** The tested range as people write it: `0.153.4 – 0.171.x`. */
export function rangeText(range: TestedRange): string {
  const [major, minor] = triple(range.max)!;
  return `${range.min} – ${major}.${minor}.x`;
}

export type VersionVerdict =
  | { outcome: 'tested' }
  /** Outside the tested range; the agent is still used. */
  | { outcome: 'untested'; message: string }
  | { outcome: 'refused'; message: string };

/**
 * The verdict on `found` (any text holding a release number: `codex-cli 0.171.0`, `2.1.3 (Claude Code)`); an unreadable
 * version is left to the adapter (tested).
 */
export function checkTestedVersion(agent: TestedAgent, found: string | undefined): VersionVerdict {
  const range = TESTED_VERSIONS[agent];
  const text = found ? findVersion(found) : undefined;
  const v = text ? triple(text) : undefined;
  if (!text || !v) return { outcome: 'tested' };
  const span = rangeText(range);
  if (compare(v, triple(range.min)!) < 0)
    return {
      outcome: 'refused',
      message: `${range.label} ${text} is older than baton supports (tested ${span}): upgrade it (${range.install})`,
    };
  if (range.refuseFrom && compare(v, triple(range.refuseFrom)!) >= 0)
    return {
      outcome: 'refused',
      message:
        `${range.label} ${text} is not supported yet (tested ${span}; ${range.refuseFrom} and later changed what ` +
        `baton relies on): install a supported release (${range.install})`,
    };
  const [major, minor] = triple(range.max)!;
  if (v[0] > major || (v[0] === major && v[1] > minor))
    return {
      outcome: 'untested',
      message:
        `${range.label} ${text} is newer than baton was tested on (${span}); it is used anyway — if something ` +
        `fails, report it or install a tested release (${range.install})`,
    };
  return { outcome: 'tested' };
}

/**
 * The one line for a server that answers 404 on a route every tested release serves: likely a release that moved its
 * API (OpenCode 2 moved its routes under `/api`), so it names the tested range and what to install.
 */
export function missingRouteMessage(agent: TestedAgent, where: string, route: string): string {
  const range = TESTED_VERSIONS[agent];
  const moved = range.refuseFrom ? ` (${range.refuseFrom} and later moved it)` : '';
  return (
    `${where} answered 404 on ${route}, which every ${range.label} baton supports serves${moved}: baton needs ` +
    `${range.label} ${rangeText(range)}; install a supported release (${range.install})`
  );
}

/** Which tested agent an agent of `kind` run as `command` is, if any (ACP agents by their binary). */
export function testedAgentOf(kind: string, command?: readonly string[]): TestedAgent | undefined {
  if (kind === 'codex') return 'codex';
  if (kind === 'claude') return 'claude-code';
  if (kind === 'opencode') return 'opencode';
  if (kind === 'acp' && command?.length) {
    const bin = command[0]!.split('/').at(-1);
    if (bin === 'gemini') return 'gemini-cli';
    if (bin === 'opencode') return 'opencode';
  }
  return undefined;
}
