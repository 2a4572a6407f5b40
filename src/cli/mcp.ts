import type { Command } from 'commander';
import { DEFAULT_PROVIDER, runProvider } from '../faces/provider/index.ts';

export function registerProviderCommand(program: Command): void {
  program
    .command('mcp')
    .description('Run a stdio MCP provider wrapping one agent CLI (codex, claude, gemini) or a leased browser.')
    .option('--provider <name>', 'which provider to serve', DEFAULT_PROVIDER)
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption(false)
    .action(async (opts: { provider: string }) => {
      // Everything but --provider is the provider's own to parse.
      await runProvider(opts.provider, stripProviderFlag(process.argv.slice(process.argv.indexOf('mcp') + 1)));
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
