// The system packages the test suite needs, in one place: `npm test` checks them before anything else (and stops in
// one line naming what is missing and the command that installs it), and .ci/run installs them. Plain JavaScript, so
// the system Node runs it before `npm ci` has brought Node 24.
//
//   node scripts/prereqs.mjs                 check; exit 1 with one line when a required one is missing
//   node scripts/prereqs.mjs --apt-packages  the Debian packages of every missing entry, required or not, one line
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * `command`: what the suite runs (looked up on PATH, or an absolute path); `apt`: the Debian package with it;
 * `required`: false for what the suite runs with or without (CI installs it anyway, as users' machines often have it).
 */
export const PREREQS = [
  { command: 'chromium', apt: 'chromium', required: true, why: 'the browser provider and dashboard tests drive it' },
  {
    command: 'bwrap',
    apt: 'bubblewrap',
    required: false,
    why: 'Codex sandboxes commands through it when installed (its bundled copy otherwise)',
  },
  { command: 'ssh', apt: 'openssh-client', required: true, why: 'the ssh target runs agents through it' },
  {
    command: '/usr/sbin/sshd',
    apt: 'openssh-server',
    required: true,
    why: 'the ssh target tests start their own server on a loopback port',
  },
];

function found(command, pathEnv = process.env.PATH ?? '') {
  const candidates = command.includes('/')
    ? [command]
    : pathEnv
        .split(delimiter)
        .filter(Boolean)
        .map((d) => join(d, command));
  return candidates.some((p) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

export function missingPrereqs(pathEnv) {
  return PREREQS.filter((p) => !found(p.command, pathEnv));
}

/** One line naming the missing required commands and the command that installs them; undefined when none is. */
export function prereqProblem(pathEnv) {
  const missing = missingPrereqs(pathEnv).filter((p) => p.required);
  if (!missing.length) return undefined;
  const names = missing.map((p) => `${p.command} (${p.why})`).join(', ');
  return `the tests need ${names}; install with: sudo apt-get install -y ${missing.map((p) => p.apt).join(' ')}`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv.includes('--apt-packages')) {
    console.log(
      missingPrereqs()
        .map((p) => p.apt)
        .join(' '),
    );
  } else {
    const problem = prereqProblem();
    if (problem) {
      console.error(problem);
      process.exit(1);
    }
  }
}
