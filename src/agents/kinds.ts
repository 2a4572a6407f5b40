// Each agent kind's config schema by kind name: what reading the hub config checks an `agents.<name>` entry against.
// Only the small schema modules, never an adapter: every CLI command that reads the config loads this, and none of
// them runs an agent (rule: lazy-commands). The registry pairs each schema with its adapter.
import type { z } from 'zod';
import { acpConfigSchema } from './acp/config.ts';
import { claudeConfigSchema } from './claude/config.ts';
import { codexAgentConfigSchema } from './codex/config.ts';
import { openCodeConfigSchema } from './opencode/config.ts';

export const AGENT_CONFIG_SCHEMAS = {
  acp: acpConfigSchema,
  claude: claudeConfigSchema,
  codex: codexAgentConfigSchema,
  opencode: openCodeConfigSchema,
} as const satisfies Record<string, z.ZodType>;

export type AgentKindName = keyof typeof AGENT_CONFIG_SCHEMAS;

/** The schema of a kind this build has, or undefined for an unknown kind. */
export function agentConfigSchema(kind: string): z.ZodType | undefined {
  return Object.hasOwn(AGENT_CONFIG_SCHEMAS, kind) ? AGENT_CONFIG_SCHEMAS[kind as AgentKindName] : undefined;
}

export const AGENT_KIND_NAMES = Object.keys(AGENT_CONFIG_SCHEMAS) as AgentKindName[];
