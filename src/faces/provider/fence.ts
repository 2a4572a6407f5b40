// The secrets fence around a provider's agents (rule: secrets-fence). A provider runs as a child of an MCP client, not
// of the hub, so it finds baton's own dirs as every baton command does ($BATON_CONFIG, $BATON_HOME, the user's dirs,
// and the config's `stateDir` key) plus the per-user defaults, and starts its agents through a `local` target that
// empties them in the agent's view. The hub config's `targets.local` decides as it does for the hub: `fence: false`
// turns the fence off, `bwrap` names the binary. Where bubblewrap cannot run, the first agent start says so in one line
// on stderr and the agents run as before.
import { readFileSync } from 'node:fs';
import { LOCAL_TARGET_NAME, type TargetConfig, targetConfigSchema } from '../../agents/targets/config.ts';
import { fenceAvailability } from '../../agents/targets/fence.ts';
import { createTarget, type ExecutionTarget, TargetError } from '../../agents/targets/target.ts';
import { isWithin, realish } from '../../lib/paths.ts';
import { locateConfig, ownDirs, userLocation } from '../locate.ts';

interface HubKeys {
  stateDir?: string;
  local: TargetConfig;
}

/** The two keys of the hub config a provider reads; a missing or unreadable config leaves the fence on by default. */
function hubKeys(configPath: string): HubKeys {
  const fallback: HubKeys = { local: { kind: 'local' } };
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(configPath, 'utf8'));
  } catch {
    return fallback;
  }
  if (!raw || typeof raw !== 'object') return fallback;
  const { stateDir, targets } = raw as { stateDir?: unknown; targets?: Record<string, unknown> };
  const local = targetConfigSchema.safeParse(targets?.[LOCAL_TARGET_NAME]);
  return {
    ...(typeof stateDir === 'string' && stateDir ? { stateDir } : {}),
    local: local.success && local.data.kind === 'local' ? local.data : fallback.local,
  };
}

/** baton's own dirs as this provider sees them, and the `local` target config that applies. */
function providerFenceSetup(env: NodeJS.ProcessEnv = process.env): {
  privateDirs: string[];
  local: TargetConfig;
} {
  const loc = locateConfig({ env });
  const keys = hubKeys(loc.configPath);
  // The per-user defaults too: a hub started without the client's $BATON_HOME keeps its files there.
  const { BATON_HOME: _h, BATON_CONFIG: _c, ...plain } = env;
  const privateDirs = [
    ...ownDirs(loc, keys.stateDir).privateDirs,
    ...ownDirs(userLocation({ env: plain }), undefined).privateDirs,
  ];
  return { privateDirs: [...new Set(privateDirs)], local: keys.local };
}

/**
 * The target a provider starts its agents on. On the first start it writes one warning line to stderr when the fence
 * is wanted but bubblewrap cannot give it; a start whose cwd lies inside baton's own dirs is refused.
 */
export function providerTarget(provider: string, env: NodeJS.ProcessEnv = process.env): ExecutionTarget {
  const { privateDirs, local } = providerFenceSetup(env);
  const target = createTarget(LOCAL_TARGET_NAME, local, { privateDirs, roots: () => [] });
  let checked = false;
  return {
    name: target.name,
    kind: target.kind,
    status: () => target.status(),
    stopGroup: (pgid, graceMs) => target.stopGroup(pgid, graceMs),
    spawn(command, args, opts) {
      if (!checked) {
        checked = true;
        const fenced = !(local.kind === 'local' && local.fence === false);
        const a = fenced ? fenceAvailability(local.kind === 'ssh' ? undefined : local.bwrap) : undefined;
        if (a && !a.ok)
          process.stderr.write(
            `[baton] warning: provider ${provider}: agents run without the secrets fence (${a.reason}) and can read baton's tokens; ${a.fix}\n`,
          );
      }
      // A work dir inside baton's own dirs would be bound back into the agent's view; none is ever one.
      const cwd = realish(opts.cwd ?? process.cwd());
      const own = privateDirs.find((d) => isWithin(d, cwd));
      if (own && target.status().fence !== 'off')
        throw new TargetError(`cwd ${cwd} lies inside baton's own files (${own}); give a project directory`);
      return target.spawn(command, args, opts);
    },
  };
}
