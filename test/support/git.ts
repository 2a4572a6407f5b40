// git for test fixtures: a repository's commands with a fixed identity, whatever the machine's git config says.
import { execFileSync } from 'node:child_process';

const IDENTITY = { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };

/** Runs `git -C cwd …args` and returns its stdout. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', env: { ...process.env, ...IDENTITY } });
}
