// `baton service install|uninstall` (rule: hub-commands): a launchd agent on macOS, a systemd --user unit on Linux.
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { HubConfig } from './config.ts';

const run = promisify(execFile);
const LABEL = 'local.baton.hub';

export interface ServiceStep {
  describe: string;
  run(): Promise<void>;
}

/** A service step that failed, in one line: the command and the last line it printed. */
export class ServiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServiceError';
  }
}

/**
 * `opts.pathEnv` (default: this process's PATH) is written into the unit: a service starts with the init system's minimal PATH, where the agent CLIs the
 * user installed (npm -g, ~/.local/bin, Homebrew) are not, so it gets the PATH `baton service install` ran with.
 */
export function serviceFiles(
  cfg: HubConfig,
  batonScript: string,
  opts: { pathEnv?: string; platform?: NodeJS.Platform } = {},
): { file: string; install: ServiceStep[]; uninstall: ServiceStep[] } {
  const pathEnv = opts.pathEnv ?? process.env.PATH ?? '';
  const argv = [process.execPath, batonScript, '--config', cfg.path, 'serve'];
  const write = (path: string, text: string): ServiceStep => ({
    describe: `write ${path}:\n${text}`,
    run: async () => {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text, { mode: 0o644 });
    },
  });
  const exec = (cmd: string, args: string[], tolerant = false): ServiceStep => ({
    describe: `run ${[cmd, ...args].join(' ')}`,
    run: async () => {
      await run(cmd, args).catch((err: Error & { stderr?: string; code?: unknown }) => {
        if (tolerant) return;
        const said =
          (err.stderr ?? '').trim().split('\n').at(-1) || (err.code === 'ENOENT' ? 'not installed' : err.message);
        throw new ServiceError(`\`${[cmd, ...args].join(' ')}\` failed: ${said}`);
      });
    },
  });
  const remove = (path: string): ServiceStep => ({
    describe: `remove ${path}`,
    run: async () => rmSync(path, { force: true }),
  });
  if ((opts.platform ?? process.platform) === 'darwin') {
    const plist = join(homedir(), 'Library', 'LaunchAgents', `${LABEL}.plist`);
    const args = argv.map((a) => `    <string>${escapeXml(a)}</string>`).join('\n');
    const text = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>${LABEL}</string>
  <key>ProgramArguments</key>
  <array>
${args}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>PATH</key><string>${escapeXml(pathEnv)}</string>
  </dict>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><true/>
  <key>StandardErrorPath</key><string>${escapeXml(join(cfg.stateDirPath, 'daemon.out'))}</string>
</dict>
</plist>
`;
    const domain = `gui/${process.getuid?.() ?? 501}`;
    return {
      file: plist,
      install: [write(plist, text), exec('launchctl', ['bootstrap', domain, plist])],
      uninstall: [exec('launchctl', ['bootout', `${domain}/${LABEL}`], true), remove(plist)],
    };
  }
  const unit = join(homedir(), '.config', 'systemd', 'user', 'baton.service');
  const text = `[Unit]
Description=baton hub (agents hand work to each other over MCP)

[Service]
Environment=${quoteSystemd(`PATH=${pathEnv}`)}
ExecStart=${argv.map(quoteSystemd).join(' ')}
Restart=on-failure
KillMode=mixed

[Install]
WantedBy=default.target
`;
  return {
    file: unit,
    install: [
      write(unit, text),
      exec('systemctl', ['--user', 'daemon-reload']),
      exec('systemctl', ['--user', 'enable', '--now', 'baton.service']),
    ],
    uninstall: [
      exec('systemctl', ['--user', 'disable', '--now', 'baton.service'], true),
      remove(unit),
      exec('systemctl', ['--user', 'daemon-reload'], true),
    ],
  };
}

function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** One word of a unit file line: quoted when needed, and `%` doubled so systemd does not read it as a specifier. */
function quoteSystemd(s: string): string {
  const word = s.replace(/%/g, '%%');
  return /[\s"\\]/.test(word) ? `"${word.replace(/["\\]/g, '\\$&')}"` : word;
}
