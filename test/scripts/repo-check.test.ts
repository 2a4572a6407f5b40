// The repository checks (scripts/repo-check.ts) on a scratch tree: a tracker-style id is refused wherever it is
// written, while the specification's requirement ids and the names of standards pass.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/repo-check.ts');
// Spelt in two halves so that this file is not itself a finding.
const key = (letters: string, n: number) => `${letters}-${n}`;

function check(files: Record<string, string>): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'repo-check-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    }
    const r = spawnSync(process.execPath, [SCRIPT], { cwd: dir, encoding: 'utf8' });
    return { status: r.status, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a tracker-style id is refused in docs, in comments and in strings', () => {
  const r = check({
    'docs/rules.md': `- \`approvals\` (${key('IS', 31)}): a parked request waits.\n`,
    'src/a.ts': `// see ${key('TG', 1)}\nexport const a = 1;\n`,
    'test/b.test.ts': `const s = 'done in ${key('JIRA', 204)}';\n`,
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`docs/rules.md:1: tracker-style id "${key('IS', 31)}"`));
  assert.match(r.stderr, new RegExp(`src/a.ts:1: tracker-style id "${key('TG', 1)}"`));
  assert.match(r.stderr, new RegExp(`test/b.test.ts:1: tracker-style id "${key('JIRA', 204)}"`));
  assert.match(r.stderr, /repo-check: 3 finding\(s\)/);
});

test("requirement ids, standards' names and longer words pass", () => {
  const r = check({
    'docs/rules.md': `- \`codex-app-server\` (${key('AG', 1)}): text in ${key('UTF', 8)}, hashed with ${key('SHA', 256)}.\n`,
    'src/a.ts': `// the tasks extension (${key('SEP', 2663)}), ${key('TE', 8)}\nexport const g = 'DEFAULT-${key('GOAL', 7)}';\n`,
  });
  assert.equal(r.stderr, '');
  assert.equal(r.status, 0);
});
