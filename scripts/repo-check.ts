// The repository's own checks, run by `npm run check` beside the compiler and the linters (`npm run lint:repo`):
//
// - Length: a file under src/ holds at most MAX_LINES lines, so each file can do one job and be read in one sitting.
//   LONG_FILES names the few that may be longer, each with its reason; an entry whose file is back under the limit is
//   printed as a note (not a failure, so that the split of a listed file lands without touching this script).
// - Tracker numbers: none in code, tests, scripts, benchmarks or docs ("issue" or "PR" and a number, a hash and
//   digits in prose, or a tracker-style id: capital letters, a hyphen and a number, whose letters are neither a
//   requirement id's of the specification nor a standard's, scripts/spec-ids.ts). A reader of the repository has no
//   tracker; a comment states the rule or the reason, and a performance choice points at the bench/README.md
//   section that measured it.
// - Words: the glossary in docs/architecture.md gives each idea one name; WORDS lists the synonyms that can be caught
//   by their spelling, with the word to use instead.
//
//   node scripts/repo-check.ts       exit 1 with one line per finding, 0 when there is none
import { globSync, readFileSync } from 'node:fs';
import { commentRanges } from './comments.ts';
import { EXTERNAL_ID_PREFIXES, SPEC_ID_PREFIXES } from './spec-ids.ts';

const MAX_LINES = 500;

/** Files under src/ allowed past MAX_LINES, and why. Keep it short: a new entry needs a reason a reviewer accepts. */
const LONG_FILES: Record<string, string> = {};

/** Generated code: whole, as its generator wrote it (`npm run generate:codex`). */
const GENERATED = /^src\/generated\//;

const CODE = ['src/**/*.ts', 'test/**/*.{ts,mjs,js}', 'scripts/**/*.{ts,mjs}', 'bench/**/*.{ts,js}', 'bin/**/*.js'];
const DOCS = ['README.md', 'CONTRIBUTING.md', 'docs/**/*.md', 'bench/README.md'];

/** The word issue, PR or pull request and a number: a tracker number wherever it is written, strings too. */
const TRACKER_WORDS = /\b(?:issues?|PR|pull request)\s?#?\d+\b/i;
/** A hash and digits in prose (comments, docs outside code); in code they are CSS colours and the like. */
const TRACKER_HASH = /(?:^|[\s([,;])#\d+\b/;
/** Capital letters, a hyphen and digits standing alone (not the tail of a longer word like DEFAULT-GOAL-7). */
const TRACKER_KEY = /(?<![\w-])([A-Z]{2,10})-\d+\b/g;
const ALLOWED_KEYS = new Set([...SPEC_ID_PREFIXES, ...EXTERNAL_ID_PREFIXES]);

interface Word {
  /** The spelling to refuse. */
  pattern: RegExp;
  /** What to write instead, from the glossary. */
  instead: string;
  /** Where it applies: src/ files and docs. */
  applies: (path: string) => boolean;
  /** A line that may use the word anyway (another project's own term, spelt as that project spells it). */
  allowLine?: RegExp;
}

const everywhere = () => true;
const outsideCodexLegacy = (path: string) =>
  !path.startsWith('src/faces/provider/codex/') && !/^docs\/(?:provider-codex|codex)\.md$/.test(path);

const WORDS: Word[] = [
  {
    pattern: /modern/i,
    instead: 'era2026 (the 2026-07-28 MCP era), or "current" for a Codex version',
    applies: everywhere,
  },
  {
    // "legacy" means Codex ≤ 0.153 and its passthrough. The MCP SDK calls the 2025 era "legacy"; its option and its
    // classifier's answer keep the SDK's spelling where baton calls them.
    pattern: /legacy/i,
    instead: 'era2025 for the 2025 MCP era; "legacy" is only Codex ≤ 0.153 (say which Codex)',
    applies: outsideCodexLegacy,
    allowLine: /codex|0\.153|legacy: 'reject'|kind === 'legacy'|isLegacyRequest/i,
  },
  { pattern: /\bhub jobs?\b/i, instead: "task (a job is a provider face's)", applies: everywhere },
  { pattern: /\bprovider tasks?\b/i, instead: "job (a task is the hub's)", applies: everywhere },
];

const findings: string[] = [];
const notes: string[] = [];
const lineOf = (text: string, at: number) => text.slice(0, at).split('\n').length;

function files(patterns: string[]): string[] {
  const seen = new Set<string>();
  for (const p of patterns) for (const f of globSync(p, { exclude: ['**/node_modules/**'] })) seen.add(f);
  return [...seen].filter((f) => !GENERATED.test(f)).sort();
}

function checkLength(path: string, text: string): void {
  if (!path.startsWith('src/')) return;
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const allowed = path in LONG_FILES;
  if (lines > MAX_LINES && !allowed) {
    findings.push(
      `${path}: ${lines} lines, over ${MAX_LINES}; split it by job (or, with a reason, list it in LONG_FILES)`,
    );
  }
  if (lines <= MAX_LINES && allowed) {
    findings.push(
      `${path}: ${lines} lines, under ${MAX_LINES} now; drop its LONG_FILES entry in scripts/repo-check.ts`,
    );
  }
}

function checkTracker(path: string, text: string, prose: Array<[number, string]>): void {
  for (const [i, line] of text.split('\n').entries()) {
    const m = TRACKER_WORDS.exec(line);
    if (m) findings.push(`${path}:${i + 1}: tracker number "${m[0]}"; state the rule or the reason instead`);
    for (const k of line.matchAll(TRACKER_KEY)) {
      if (ALLOWED_KEYS.has(k[1] ?? '')) continue;
      findings.push(
        `${path}:${i + 1}: tracker-style id "${k[0]}"; name the rule (docs/rules.md) or state the reason instead ` +
          "(a standard's name goes in EXTERNAL_ID_PREFIXES, scripts/spec-ids.ts)",
      );
    }
  }
  for (const [line, chunk] of prose) {
    for (const [i, l] of chunk.split('\n').entries()) {
      const m = TRACKER_HASH.exec(l);
      if (m)
        findings.push(`${path}:${line + i}: tracker number "${m[0].trim()}"; state the rule or the reason instead`);
    }
  }
}

function checkWords(path: string, text: string): void {
  for (const word of WORDS) {
    if (!word.applies(path)) continue;
    for (const [i, line] of text.split('\n').entries()) {
      const m = word.pattern.exec(line);
      if (!m || word.allowLine?.test(line)) continue;
      findings.push(`${path}:${i + 1}: "${m[0]}"; the glossary (docs/architecture.md) says ${word.instead}`);
    }
  }
}

/** Markdown outside fenced blocks and inline code, as [first line, text] chunks. */
function markdownProse(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  let fenced = false;
  for (const [i, line] of text.split('\n').entries()) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push([i + 1, line.replace(/`[^`]*`/g, '``')]);
  }
  return out;
}

for (const path of files(CODE)) {
  const text = readFileSync(path, 'utf8');
  checkLength(path, text);
  const prose = commentRanges(path, text).map(([s, e]): [number, string] => [lineOf(text, s), text.slice(s, e)]);
  checkTracker(path, text, prose);
  if (path.startsWith('src/')) checkWords(path, text);
}
for (const path of files(DOCS)) {
  const text = readFileSync(path, 'utf8');
  checkTracker(path, text, markdownProse(text));
  checkWords(path, text);
}

for (const n of notes) console.log(`note: ${n}`);
for (const f of findings) console.error(f);
if (findings.length > 0) console.error(`repo-check: ${findings.length} finding(s)`);
process.exitCode = findings.length === 0 ? 0 : 1;
