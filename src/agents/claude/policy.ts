// Which Claude Code flags a run gets. Every run is cut off from MCP servers, hooks, slash commands, skills and
// sub-agents (rule: no-recursion); the reviewer policy (rule: claude-reviewer) narrows tools further to read-only
// inspection in plan mode.
import type { Sandbox } from '../agent.ts';

export const CLAUDE_EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type ClaudeEffort = (typeof CLAUDE_EFFORTS)[number];

/** The alias Claude Code resolves to its most capable model; pinned for reviews unless the operator says otherwise. */
export const STRONGEST_CLAUDE_MODEL = 'fable';
export const HIGHEST_CLAUDE_EFFORT: ClaudeEffort = 'max';

export type ClaudePolicy = 'reviewer' | Sandbox;

/** Appended to the system prompt of reviewer runs: a leaf reviewer looks, it does not act. */
export const LEAF_REVIEWER_INSTRUCTION = [
  'You are a leaf reviewer answering another agent. Inspect the repository read-only and reply with your findings.',
  'Do not run tests, builds, linters or package installs. Do not create, edit or delete files.',
  'Do not delegate to other agents or tools, and cause no side effects outside this process',
  '(no network calls, no git writes, no messages). Read-only inspection commands are fine.',
].join(' ');

const NO_MCP_SERVERS = JSON.stringify({ mcpServers: {} });
const NO_HOOKS = JSON.stringify({ disableAllHooks: true });

// Tool sets per policy. Sub-agent (Task/Agent), Skill, web and scheduling tools are never offered.
const REVIEWER_TOOLS = 'Read,Glob,Grep,Bash';
const WRITER_TOOLS = 'Read,Glob,Grep,Bash,Edit,Write,NotebookEdit';

export interface ClaudeArgsSpec {
  outputFormat: 'json' | 'stream-json';
  policy: ClaudePolicy;
  resume?: string;
  model?: string;
  effort?: string;
}

/** argv for `claude`; the prompt itself goes through stdin so it can never be read as a flag. */
export function claudeArgs(spec: ClaudeArgsSpec): string[] {
  const args = ['-p', '--output-format', spec.outputFormat];
  // Partial messages carry the answer's text deltas, shown live (rule: live-text).
  if (spec.outputFormat === 'stream-json') args.push('--verbose', '--include-partial-messages');
  if (spec.resume) args.push('--resume', spec.resume);
  if (spec.model) args.push('--model', spec.model);
  if (spec.effort) args.push('--effort', spec.effort);
  args.push(
    '--strict-mcp-config',
    '--mcp-config',
    NO_MCP_SERVERS,
    '--settings',
    NO_HOOKS,
    '--disable-slash-commands',
    // Nobody can answer a prompt in a headless run: anything that would ask is denied and reported.
    '--permission-prompts',
    'none',
  );
  switch (spec.policy) {
    case 'reviewer':
    case 'read-only':
      args.push('--tools', REVIEWER_TOOLS, '--permission-mode', 'plan');
      if (spec.policy === 'reviewer') args.push('--append-system-prompt', LEAF_REVIEWER_INSTRUCTION);
      break;
    case 'workspace-write':
      args.push('--tools', WRITER_TOOLS, '--permission-mode', 'acceptEdits');
      break;
    case 'danger-full-access':
      args.push('--tools', WRITER_TOOLS, '--permission-mode', 'acceptEdits', '--allowedTools', 'Bash');
      break;
  }
  return args;
}
