// The `baton` command line: thin commands that parse flags and call a face or the engine.
import { Command, CommanderError } from 'commander';
import { registerAttachCommand } from './attach.ts';
import { registerHubCommands } from './hub.ts';
import { registerProviderCommand } from './mcp.ts';
import { registerStoreCommand } from './store.ts';
import { registerTasksCommand } from './tasks.ts';

const program = new Command('baton')
  .description('Let AI coding agents hand work to each other over MCP.')
  .showHelpAfterError()
  .exitOverride();

registerHubCommands(program);
registerProviderCommand(program);
registerAttachCommand(program);
registerTasksCommand(program);
registerStoreCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  process.stderr.write(`baton: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
