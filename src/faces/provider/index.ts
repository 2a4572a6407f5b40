// `baton mcp --provider <name>`: each provider owns its folder and parses its own flags.

export interface ProviderModule {
  /** Runs the stdio MCP server until stdin closes; `argv` are the flags after `--provider <name>`. */
  run(argv: string[]): Promise<void>;
}

export const PROVIDERS: Record<string, () => Promise<ProviderModule>> = {
  browser: () => import('./browser/server.ts'),
  claude: () => import('./claude/index.ts'),
  codex: () => import('./codex/index.ts'),
  gemini: () => import('./gemini/index.ts'),
};

export const DEFAULT_PROVIDER = 'codex';

export async function runProvider(name: string, argv: string[]): Promise<void> {
  const load = PROVIDERS[name];
  if (!load) {
    const known = Object.keys(PROVIDERS).sort();
    throw new Error(
      `provider "${name}" is not available in this build` +
        (known.length ? `; available: ${known.join(', ')}` : '; no providers are available yet'),
    );
  }
  const mod = await load();
  await mod.run(argv);
}
