// The hub config, loaded on use. faces/hub/config.ts brings zod and every agent kind's config schema (never an
// adapter), so a command imports it only inside its action: `baton mcp` and `baton attach` never read the config and
// must not pay for it at start (rule: lazy-commands).
import type { HubConfig } from '../faces/hub/config.ts';
import { locateConfig } from '../faces/hub/locate.ts';

export const hubConfigModule = () => import('../faces/hub/config.ts');

/** The config named by --config (else $BATON_CONFIG, $BATON_HOME, the per-user dir), as every command finds it. */
export async function loadHubConfig(flag: string | undefined): Promise<HubConfig> {
  const { loadConfig } = await hubConfigModule();
  return loadConfig(locateConfig({ flag }));
}
