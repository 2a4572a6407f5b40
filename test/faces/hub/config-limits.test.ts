// The hub config's caps and budgets (rules: run-caps, usage-budgets): limits.maxRunning, agents.<name>.maxRunning and
// the budgets are positive numbers (caps and token budgets whole),
// anything else is refused at load with the key's path; an agent's own keys never reach its kind's strict schema.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { approvalPolicyOf, budgetOf, ConfigError, loadConfig } from '../../../src/faces/hub/config.ts';
import { tempDir } from '../../support/tmp.ts';

function writer(t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t);
  const project = join(dir, 'project');
  mkdirSync(project);
  let n = 0;
  return (extra: Record<string, unknown>) => {
    const home = join(dir, `h${n++}`);
    mkdirSync(home, { mode: 0o700 });
    const path = join(home, 'config.json');
    const config = {
      version: 1,
      roots: [project],
      control: { token: 'c'.repeat(40) },
      callers: { alice: { token: 'a'.repeat(40) } },
      agents: { claude: { kind: 'claude' } },
      ...extra,
    };
    writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
    return path;
  };
}

test('caps: limits.maxRunning and an agent maxRunning load; the agent entry the adapter sees has no maxRunning', (t) => {
  const write = writer(t);
  const cfg = loadConfig(
    write({
      limits: { maxRunning: 6 },
      agents: { claude: { kind: 'claude', maxRunning: 2 }, codex: { kind: 'codex' } },
    }),
  );
  assert.equal(cfg.limits.maxRunning, 6);
  assert.deepEqual(cfg.agentMaxRunning, { claude: 2 });
  assert.deepEqual(cfg.agents.claude, { kind: 'claude' });
  const unset = loadConfig(write({}));
  assert.equal(unset.limits.maxRunning, undefined, 'unset: the engine uses twice the CPU count');
  assert.deepEqual(unset.agentMaxRunning, {});
});

test('caps: zero, negative, fractional or non-number caps are refused with their path', (t) => {
  const write = writer(t);
  for (const bad of [0, -1, 1.5, '4']) {
    assert.throws(
      () => loadConfig(write({ limits: { maxRunning: bad } })),
      (err: Error) => err instanceof ConfigError && /limits\.maxRunning: /.test(err.message),
      `limits.maxRunning ${JSON.stringify(bad)}`,
    );
    assert.throws(
      () => loadConfig(write({ agents: { claude: { kind: 'claude', maxRunning: bad } } })),
      (err: Error) => err instanceof ConfigError && /agents\.claude\.maxRunning: /.test(err.message),
      `agents.claude.maxRunning ${JSON.stringify(bad)}`,
    );
  }
  assert.throws(
    () => loadConfig(write({ limits: { maxRunning: 0 } })),
    (err: Error) => /limits\.maxRunning: must be a positive number/.test(err.message),
  );
});

test('budgets: hub-wide limits, a caller’s own in their place; zero, negative or non-number budgets are refused with their path', (t) => {
  const write = writer(t);
  const cfg = loadConfig(
    write({
      limits: { maxTokensPerRound: 5000, maxCostUsdPerRound: 0.5, maxCostUsdPerDay: 10 },
      callers: {
        alice: { token: 'a'.repeat(40), limits: { maxCostUsdPerRound: 2, maxTokensPerDay: 100000 } },
        bob: { token: 'b'.repeat(40) },
      },
    }),
  );
  assert.deepEqual(budgetOf(cfg, 'alice'), {
    maxTokensPerRound: 5000,
    maxCostUsdPerRound: 2,
    maxTokensPerDay: 100000,
    maxCostUsdPerDay: 10,
  });
  assert.deepEqual(budgetOf(cfg, 'bob'), { maxTokensPerRound: 5000, maxCostUsdPerRound: 0.5, maxCostUsdPerDay: 10 });
  assert.deepEqual(budgetOf(loadConfig(write({})), 'alice'), {}, 'no budget unless set');
  for (const key of ['maxTokensPerRound', 'maxCostUsdPerRound', 'maxTokensPerDay', 'maxCostUsdPerDay']) {
    for (const bad of [0, -2, '1']) {
      assert.throws(
        () => loadConfig(write({ limits: { [key]: bad } })),
        (err: Error) => err instanceof ConfigError && new RegExp(`limits\\.${key}: `).test(err.message),
        `limits.${key} ${JSON.stringify(bad)}`,
      );
      assert.throws(
        () => loadConfig(write({ callers: { alice: { token: 'a'.repeat(40), limits: { [key]: bad } } } })),
        (err: Error) =>
          err instanceof ConfigError && new RegExp(`callers\\.alice\\.limits\\.${key}: `).test(err.message),
        `callers.alice.limits.${key} ${JSON.stringify(bad)}`,
      );
    }
  }
  assert.throws(
    () => loadConfig(write({ limits: { maxTokensPerRound: 1.5 } })),
    (err: Error) => /limits\.maxTokensPerRound: must be a whole number/.test(err.message),
  );
  assert.throws(
    () => loadConfig(write({ callers: { alice: { token: 'a'.repeat(40), limits: { maxRunning: 2 } } } })),
    (err: Error) => /callers\.alice\.limits: unknown key\(s\) maxRunning/.test(err.message),
  );
});

test('approvals: ask per caller and agent; ask on a kind that cannot ask, an unknown agent or policy, a non-positive timeout are refused', (t) => {
  const write = writer(t);
  const agents = {
    claude: { kind: 'claude' },
    gemini: { kind: 'acp', command: ['gemini', '--acp'] },
    opencode: { kind: 'opencode' },
  };
  const cfg = loadConfig(
    write({
      agents,
      limits: { approvalTimeoutMs: 60_000 },
      callers: { alice: { token: 'a'.repeat(40), approvals: { gemini: 'ask', claude: 'deny', opencode: 'ask' } } },
    }),
  );
  assert.equal(approvalPolicyOf(cfg, 'alice', 'gemini'), 'ask');
  assert.equal(approvalPolicyOf(cfg, 'alice', 'opencode'), 'ask', 'OpenCode permission requests can be put to someone');
  assert.equal(approvalPolicyOf(cfg, 'alice', 'claude'), 'deny');
  assert.equal(approvalPolicyOf(cfg, 'bob', 'gemini'), 'deny', 'deny unless configured');
  assert.equal(cfg.limits.approvalTimeoutMs, 60_000);
  const refused = (extra: Record<string, unknown>, pattern: RegExp) =>
    assert.throws(
      () => loadConfig(write({ agents, ...extra })),
      (err: Error) => err instanceof ConfigError && pattern.test(err.message),
      String(pattern),
    );
  refused(
    { callers: { alice: { token: 'a'.repeat(40), approvals: { claude: 'ask' } } } },
    /callers\.alice\.approvals\.claude: "ask" is refused: Claude Code runs with a fixed tool list/,
  );
  refused(
    { callers: { alice: { token: 'a'.repeat(40), approvals: { ghost: 'ask' } } } },
    /approvals: unknown agent "ghost"/,
  );
  refused(
    { callers: { alice: { token: 'a'.repeat(40), approvals: { gemini: 'maybe' } } } },
    /callers\.alice\.approvals\.gemini: /,
  );
  refused({ limits: { approvalTimeoutMs: 0 } }, /limits\.approvalTimeoutMs: must be a positive number/);
  refused({ limits: { approvalTimeoutMs: -5 } }, /limits\.approvalTimeoutMs: /);
});
