import type { Command } from 'commander';
import { DEFAULT_PROVIDER, PROVIDERS, providersHelp, runProvider } from '../faces/provider/index.ts';

export function registerProviderCommand(program: Command): void {
  program
    .command('mcp')
    .description('Run a stdio MCP provider wrapping one agent CLI (codex, claude, gemini) or a leased browser.')
    .option(
      '--provider <name>',
      `which provider to serve: ${Object.keys(PROVIDERS).sort().join(', ')}`,
      DEFAULT_PROVIDER,
    )
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption(false)
    .action(async (opts: { provider: string }) => {
      const rest = process.argv.slice(process.argv.indexOf('mcp') + 1);
      const named = rest.some((a) => a === '--provider' || a.startsWith('--provider='));
      // Without --provider, --help is about the command: every provider and its flags. With one, it is that one's.
      if (!named && rest.some((a) => a === '--help' || a === '-h')) {
        process.stdout.write(await providersHelp());
        return;
      }
      (await import('../lib/json-stringify.ts')).useFastJsonStringify();
      // Everything but --provider is the provider's own to parse.
      await runProvider(opts.provider, stripProviderFlag(rest));
    });
}

function stripProviderFlag(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--provider') {
      i++;
      continue;
    }
    if (a.startsWith('--provider=')) continue;
    out.push(a);
  }
  return out;
}
