// `baton mcp --provider <name>`: each provider owns its folder and parses its own flags.

export interface ProviderModule {
  /** Runs the stdio MCP server until stdin closes; `argv` are the flags after `--provider <name>`. */
  run(argv: string[]): Promise<void>;
  /** The provider's own flags as its `--help` prints them. */
  help(): string;
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

/** `baton mcp --help`: the --provider flag, the providers, and each provider's flags (rule: operator-cli). */
export async function providersHelp(): Promise<string> {
  const names = Object.keys(PROVIDERS).sort();
  const parts = [
    'Usage: baton mcp [--provider <name>] [provider flags]',
    '',
    'Run a stdio MCP provider wrapping one agent CLI or a leased browser.',
    '',
    'Options:',
    `  --provider <name>  which provider to serve: ${names.join(', ')} (default: ${DEFAULT_PROVIDER})`,
    "  -h, --help         this list; with --provider <name>, only that provider's flags",
  ];
  for (const name of names) {
    const mod = await PROVIDERS[name]!();
    parts.push(
      '',
      `--provider ${name}:`,
      ...mod
        .help()
        .trimEnd()
        .split('\n')
        .map((l) => (l ? `  ${l}` : l)),
    );
  }
  return `${parts.join('\n')}\n`;
}
