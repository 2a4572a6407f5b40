// `baton connect <client>`: registers the hub (or a stdio provider) with an MCP client through that client's
// own CLI, plus the one permission setting it needs to call baton's tools non-interactively; prints what it changed.
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { CLIENTS, type ClientName, isClientName } from '../faces/hub/client-names.ts';
import type { Scope, Server } from '../faces/hub/clients.ts';
import { PROVIDERS } from '../faces/provider/index.ts';
import { hubConfigModule, loadHubConfig } from './hub-config.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

interface ConnectOptions {
  scope: string;
  print?: boolean;
  provider?: string;
}

export function registerConnectCommand(program: Command): void {
  program
    .command('connect')
    .description(
      `Register baton with an MCP client (${CLIENTS.join(', ')}) through its own CLI, with the setting it needs to call baton's tools without asking.`,
    )
    .argument('<client>', CLIENTS.join(' | '))
    .option('--scope <scope>', 'user (every project) or project (this directory only)', 'user')
    .option('--print', 'print the commands and edits without running them')
    .option(
      '--provider <name>',
      `register a stdio provider (${Object.keys(PROVIDERS).sort().join(', ')}) instead of the hub`,
    )
    .action(async (client: string, opts: ConnectOptions) => {
      // The plans and what runs them are this command's own code, loaded when it runs (rule: lazy-commands).
      const { ConnectError } = await import('../faces/hub/clients.ts');
      if (!isClientName(client))
        throw new ConnectError(`unknown client "${client}"; baton can connect: ${CLIENTS.join(', ')}`);
      if (opts.scope !== 'user' && opts.scope !== 'project')
        throw new ConnectError(`--scope must be user or project (got "${opts.scope}")`);
      await connect(client, opts.scope, opts, program.opts<{ config?: string }>().config);
    });
}

async function connect(client: ClientName, scope: Scope, opts: ConnectOptions, configFlag?: string): Promise<void> {
  const { CLIENT_INFO, ConnectError, describeStep, planConnect, runPlan, shellQuote } = await import(
    '../faces/hub/clients.ts'
  );
  const { connectionsDir, tokenEnvName } = await import('../faces/hub/examples.ts');
  const info = CLIENT_INFO[client];
  let server: Server;
  let notes: string[] = [];
  if (opts.provider !== undefined) {
    if (!(opts.provider in PROVIDERS))
      throw new ConnectError(
        `unknown provider "${opts.provider}"; available: ${Object.keys(PROVIDERS).sort().join(', ')}`,
      );
    // Absolute Node + absolute bin script: the client can start it from any directory, and no npm banner reaches the
    // MCP stdout.
    const script = realpathSync(process.argv[1]!);
    server = {
      name: `baton-${opts.provider}`,
      transport: 'stdio',
      command: [process.execPath, script, 'mcp', '--provider', opts.provider],
    };
  } else {
    const cfg = await loadHubConfig(configFlag);
    if (!cfg.callers[client]) {
      throw new ConnectError(
        `the hub config ${cfg.path} has no caller "${client}"; add one under "callers" (with its own token) and run this again`,
      );
    }
    const host = cfg.listen.host === '0.0.0.0' ? '127.0.0.1' : cfg.listen.host;
    const tokenVar = tokenEnvName(client);
    server = { name: 'baton', transport: 'http', url: `http://${host}:${cfg.listen.port}/mcp/${client}`, tokenVar };
    const unset = process.env[tokenVar] ? '' : ` (it is not set in this shell)`;
    notes = [
      `${info.label} reads its token from $${tokenVar}, never from its config: \`source ${join(connectionsDir(cfg), 'tokens.env')}\` (or export it) where you start ${info.binary}${unset}`,
    ];
    if (scope === 'project' && !cfg.rootsReal.some((r) => isInside(realpathSync(process.cwd()), r))) {
      notes.push(`${process.cwd()} is not inside an authorised root of this hub, so tasks cannot run here yet`);
    }
  }

  const { findOnPath } = await hubConfigModule();
  const found = findOnPath(info.binary);
  const cwd = process.cwd();
  const plan = planConnect(client, scope, server, {
    bin: opts.print ? info.binary : (found ?? ''),
    cwd,
    env: process.env,
  });
  if (!found && !opts.print) {
    throw new ConnectError(
      `${info.label} is not installed (no \`${info.binary}\` on PATH); install it with \`${info.install}\`, then run this again. Nothing was changed.`,
    );
  }

  const target =
    server.transport === 'http' ? `the baton hub at ${server.url}` : `\`baton mcp --provider ${opts.provider}\``;
  if (opts.print) {
    out(`# connect ${info.label} (${scope} scope) to ${target}; nothing below has been run`);
    if (!found) out(`# ${info.binary} is not on PATH: install it first with \`${info.install}\``);
    for (const s of plan.steps) out(describeStep(s));
    for (const n of notes) out(`# ${n}`);
    return;
  }
  out(`connecting ${info.label} (${scope} scope) to ${target}`);
  const outcomes = await runPlan(plan, process.env, cwd);
  for (const o of outcomes) {
    if (o.step.kind === 'exec') {
      const argv = [info.binary, ...o.step.argv.slice(1)];
      out(`${o.ok ? 'ran' : 'ran (nothing to remove)'}: ${shellQuote(argv)}`);
    } else out(`edited ${o.step.path}: ${o.step.why}`);
  }
  for (const n of notes) out(`note: ${n}`);
  out(`check it: \`baton doctor\` (${info.label} registered, its token set here, the hub answering)`);
}

interface DisconnectOptions {
  scope: string;
  print?: boolean;
  provider?: string;
  all?: boolean;
}

export function registerDisconnectCommand(program: Command): void {
  program
    .command('disconnect')
    .description(
      'Undo `baton connect`: remove baton from a client (or every client with --all) and the permission setting connect added, nothing else.',
    )
    .argument('[client]', CLIENTS.join(' | '))
    .option('--all', 'every client baton can connect, and every baton entry (the hub and the stdio providers)')
    .option('--scope <scope>', 'user (every project) or project (this directory only)', 'user')
    .option('--print', 'print the commands and edits without running them')
    .option('--provider <name>', `remove the stdio provider's entry (${Object.keys(PROVIDERS).sort().join(', ')})`)
    .action(async (client: string | undefined, opts: DisconnectOptions) => {
      const { ConnectError } = await import('../faces/hub/clients.ts');
      if (opts.all ? client !== undefined : client === undefined)
        throw new ConnectError(`name one client (${CLIENTS.join(', ')}) or pass --all`);
      if (client !== undefined && !isClientName(client))
        throw new ConnectError(`unknown client "${client}"; baton can disconnect: ${CLIENTS.join(', ')}`);
      if (opts.scope !== 'user' && opts.scope !== 'project')
        throw new ConnectError(`--scope must be user or project (got "${opts.scope}")`);
      if (opts.provider !== undefined && !(opts.provider in PROVIDERS))
        throw new ConnectError(
          `unknown provider "${opts.provider}"; available: ${Object.keys(PROVIDERS).sort().join(', ')}`,
        );
      const { batonEntryNames } = await import('../faces/hub/client-registrations.ts');
      const names = opts.all
        ? batonEntryNames(Object.keys(PROVIDERS).sort())
        : opts.provider === undefined
          ? ['baton']
          : [`baton-${opts.provider}`];
      const clients = opts.all ? CLIENTS.filter((c) => c !== 'codex' || opts.scope === 'user') : [client as ClientName];
      let failed = false;
      for (const c of clients) {
        try {
          await disconnect(c, opts.scope, names, opts.print === true);
        } catch (err) {
          // With --all, one client's failure does not keep the others connected; the exit code says it.
          if (!opts.all) throw err;
          process.stderr.write(`baton: ${err instanceof Error ? err.message : String(err)}\n`);
          failed = true;
        }
      }
      if (failed) process.exitCode = 1;
    });
}

async function disconnect(client: ClientName, scope: Scope, names: string[], print: boolean): Promise<void> {
  const { CLIENT_INFO, ConnectError, describeStep, runPlan, shellQuote } = await import('../faces/hub/clients.ts');
  const { findRegistrations, planDisconnect } = await import('../faces/hub/client-registrations.ts');
  const { findOnPath } = await hubConfigModule();
  const info = CLIENT_INFO[client];
  const cwd = process.cwd();
  const found = findOnPath(info.binary);
  const plan = planDisconnect(client, scope, names, {
    bin: print ? info.binary : (found ?? ''),
    cwd,
    env: process.env,
  });
  const what = `${info.label} (${scope} scope)`;
  if (!plan.steps.length) {
    const other: Scope = scope === 'user' ? 'project' : 'user';
    const elsewhere =
      client === 'codex' ? [] : findRegistrations(client, other, names, { cwd, env: process.env }).map((r) => r.name);
    const hint = elsewhere.length
      ? ` (${elsewhere.join(', ')} is registered in its ${other} scope here: \`baton disconnect ${client} --scope ${other}\`)`
      : '';
    out(`${what}: no baton entry; nothing to remove${hint}`);
    return;
  }
  if (print) {
    out(`# disconnect ${what}; nothing below has been run`);
    if (!found && plan.steps.some((s) => s.kind === 'exec'))
      out(`# ${info.binary} is not on PATH: these commands need it installed`);
    for (const s of plan.steps) out(describeStep(s));
    return;
  }
  if (!found && plan.steps.some((s) => s.kind === 'exec')) {
    throw new ConnectError(
      `${info.label} is not installed (no \`${info.binary}\` on PATH), so its own remove cannot run; its baton entry stays in ${plan.files.join(' or ')} (harmless while ${info.binary} is not installed). Nothing was changed.`,
    );
  }
  out(`disconnecting ${what}`);
  for (const o of await runPlan(plan, process.env, cwd)) {
    if (o.step.kind === 'exec') out(`ran: ${shellQuote([info.binary, ...o.step.argv.slice(1)])}`);
    else out(`edited ${o.step.path}: ${o.step.why}`);
  }
}

function isInside(dir: string, root: string): boolean {
  return dir === root || dir.startsWith(root.endsWith('/') ? root : `${root}/`);
}
