// The `baton` command line: thin commands that parse flags and call a face or the engine.
import { Command, CommanderError } from 'commander';
import { agentSearchPath } from '../lib/agent-path.ts';
import { BATON_VERSION } from '../version.ts';
import { registerAttachCommand } from './attach.ts';
import { registerConnectCommand, registerDisconnectCommand } from './connect.ts';
import { registerHubCommands } from './hub.ts';
import { registerProviderCommand } from './mcp.ts';
import { registerStoreCommand } from './store.ts';
import { registerTasksCommand } from './tasks.ts';
import { registerUiCommand } from './ui.ts';

// Every agent binary baton runs or reports — init's discovery, doctor, the hub's agents, the providers — is looked up
// through this one PATH: the user's, plus the usual install places, minus baton's own node_modules/.bin (which npm
// scripts and npx put first). Children inherit it, so what doctor reports is what the hub runs.
process.env.PATH = agentSearchPath(process.env.PATH);

// A reader that stops early (`baton … | head -1`) closes the pipe: that ends the output, not in a stack trace. Writes
// go on failing silently until the command ends by itself; the exit status stays the command's own.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

const program = new Command('baton')
  .description('Let AI coding agents hand work to each other over MCP.')
  .version(BATON_VERSION, '-V, --version', 'print the version')
  .showHelpAfterError()
  .exitOverride();

registerHubCommands(program);
registerProviderCommand(program);
registerAttachCommand(program);
registerTasksCommand(program);
registerConnectCommand(program);
registerDisconnectCommand(program);
registerStoreCommand(program);
registerUiCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  // Commander's own errors are usage errors (unknown option, bad value, missing argument): exit 2, while help and
  // version keep their 0 (rule: operator-cli).
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  process.stderr.write(`baton: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
