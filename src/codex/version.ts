// Codex release numbers (rule: codex-versions): strict parsing and a minimum-version check with prerelease ordering.

/** The first Codex release that publishes `--listen unix://PATH` as an alias (rule: unix-socket-alias). */
export const CODEX_UNIX_SOCKET_MINIMUM_VERSION = '0.156.0';

export interface CodexVersion {
  major: number;
  minor: number;
  patch: number;
  /** The prerelease after '-', e.g. 'alpha.2'; null for a release. */
  prerelease: string | null;
  text: string;
}

const NUMERIC = '(?:0|[1-9][0-9]*)';
const PRERELEASE_ID = '(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)';
const VERSION_PATTERN = new RegExp(
  `^(${NUMERIC})\\.(${NUMERIC})\\.(${NUMERIC})(?:-(${PRERELEASE_ID}(?:\\.${PRERELEASE_ID})*))?$`,
);

/**
 * Reads exactly one release number, MAJOR.MINOR.PATCH with an optional prerelease. Anything else is null: a prefix
 * such as `codex-cli `, surrounding whitespace, build metadata, leading zeros, components beyond the safe integers.
 */
export function parseCodexVersion(text: string): CodexVersion | null {
  if (typeof text !== 'string') return null;
  const m = VERSION_PATTERN.exec(text);
  if (!m) return null;
  const parts = [m[1]!, m[2]!, m[3]!].map(Number);
  if (!parts.every(Number.isSafeInteger)) return null;
  const prerelease = m[4] ?? null;
  if (prerelease?.split('.').some((id) => /^[0-9]+$/.test(id) && !Number.isSafeInteger(Number(id)))) return null;
  return { major: parts[0]!, minor: parts[1]!, patch: parts[2]!, prerelease, text };
}

/** `codex --version` output ("codex-cli 0.169.0"): the text after the program name, and that text parsed. */
export function readCodexVersionOutput(stdout: string): { text: string; version: CodexVersion | null } {
  const text = stdout.trim().replace(/^codex-cli\s+/, '');
  return { text, version: parseCodexVersion(text) };
}

/** Semantic-versioning precedence: a prerelease sorts before its release. */
export function compareCodexVersions(a: CodexVersion, b: CodexVersion): number {
  for (const key of ['major', 'minor', 'patch'] as const) {
    if (a[key] !== b[key]) return a[key] < b[key] ? -1 : 1;
  }
  if (a.prerelease === null || b.prerelease === null) {
    return a.prerelease === b.prerelease ? 0 : a.prerelease === null ? 1 : -1;
  }
  const left = a.prerelease.split('.');
  const right = b.prerelease.split('.');
  const n = Math.min(left.length, right.length);
  for (let i = 0; i < n; i++) {
    const x = left[i]!;
    const y = right[i]!;
    if (x === y) continue;
    const xNum = /^[0-9]+$/.test(x);
    const yNum = /^[0-9]+$/.test(y);
    if (xNum && yNum) return Number(x) < Number(y) ? -1 : 1;
    if (xNum !== yNum) return xNum ? -1 : 1;
    return x < y ? -1 : 1;
  }
  return Math.sign(left.length - right.length);
}

export type CodexVersionUnsupportedReason = 'unreadable' | 'below_minimum';

export class CodexVersionUnsupportedError extends Error {
  readonly reason: CodexVersionUnsupportedReason;
  /** The checked version text; null when none was reported. */
  readonly version: string | null;
  readonly minimum: string;
  constructor(reason: CodexVersionUnsupportedReason, version: string | null, minimum: string) {
    super(
      reason === 'unreadable'
        ? `Codex did not report a readable version; Codex ${minimum} or newer is required`
        : `Codex ${version} is older than the required Codex ${minimum}`,
    );
    this.name = 'CodexVersionUnsupportedError';
    this.reason = reason;
    this.version = version;
    this.minimum = minimum;
  }
}

/**
 * Returns the parsed version when it is `minimum` or newer (a prerelease of a newer release counts; a prerelease of
 * the minimum itself does not). `minimum` must be a release number, not a prerelease.
 */
export function requireCodexVersion(
  version: string | null | undefined,
  minimum: string = CODEX_UNIX_SOCKET_MINIMUM_VERSION,
): CodexVersion {
  const floor = parseCodexVersion(minimum);
  if (!floor || floor.prerelease !== null) {
    throw new TypeError(`minimum must be a Codex release number such as ${CODEX_UNIX_SOCKET_MINIMUM_VERSION}`);
  }
  const checked = version ?? null;
  const parsed = typeof checked === 'string' ? parseCodexVersion(checked) : null;
  if (!parsed) throw new CodexVersionUnsupportedError('unreadable', checked, minimum);
  if (compareCodexVersions(parsed, floor) < 0)
    throw new CodexVersionUnsupportedError('below_minimum', checked, minimum);
  return parsed;
}
