// `baton ui` (rule: dashboard): logs the operator into the running hub's dashboard with a one-time link. The control
// token stays in the config and goes only to the hub as a bearer; the link carries a single-use code that expires in
// minutes. With a browser opener and a display the link is opened and not printed; otherwise it is printed.
import type { Command } from 'commander';
import { findAgentBinary } from '../lib/agent-path.ts';
import { redactError } from '../lib/redact.ts';
import { control } from './control.ts';
import { loadHubAddress } from './hub-config.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

export function registerUiCommand(program: Command): void {
  program
    .command('ui')
    .description('Open the dashboard in a browser, logged in by a one-time link (or print the link).')
    .option('--print', 'print the one-time login link instead of opening a browser')
    .action(async (opts: { print?: boolean }) => {
      const cfg = await loadHubAddress(program.opts<{ config?: string }>().config);
      const host = cfg.listen.host === '0.0.0.0' ? '127.0.0.1' : cfg.listen.host;
      const base = `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${cfg.listen.port}`;
      const res = await control(cfg, 'POST', '/ui/link').catch((err) => {
        throw new Error(`the hub is not answering on ${base} (${redactError(err)}); start it with \`baton start\``);
      });
      if (res.status !== 201) throw new Error(`the hub refused a login link: HTTP ${res.status}`);
      const { path, expiresInSeconds } = (await res.json()) as { path: string; expiresInSeconds: number };
      const link = `${base}${path}`;
      const minutes = Math.round(expiresInSeconds / 60);
      const opener = opts.print ? undefined : browserOpener();
      if (opener && (await launched(opener, link))) {
        out(`opened the dashboard (${base}/ui) in your browser with a one-time login link`);
        out('if no browser appeared, run `baton ui --print` and open the link it prints');
        return;
      }
      out(`dashboard: ${base}/ui`);
      out(`one-time login link (works once, for ${minutes} minutes; do not share it):`);
      out(link);
    });
}

/** `open` on macOS; `xdg-open` elsewhere when there is a display to open a browser on. */
function browserOpener(): string | undefined {
  if (process.platform === 'darwin') return findAgentBinary('open');
  if (!process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return undefined;
  return findAgentBinary('xdg-open');
}

/** Starts the opener detached; false when it could not be started (the link is then printed instead). */
async function launched(opener: string, link: string): Promise<boolean> {
  const { spawn } = await import('node:child_process');
  return new Promise((resolve) => {
    const child = spawn(opener, [link], { detached: true, stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}
