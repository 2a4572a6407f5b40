import type { Command } from 'commander';
import { CrossHarnessMcpServer } from '../faces/attach/server.ts';

export function registerAttachCommand(program: Command): void {
  program
    .command('attach')
    .description(
      'Serve the attach tools over stdio: talk to chats in running OpenCode servers and Codex app-servers at origins ' +
        'listed in BATON_ALLOWED_SERVER_URLS (credentials from OPENCODE_SERVER_PASSWORD / CODEX_REMOTE_TOKEN).',
    )
    .action(async () => {
      const server = new CrossHarnessMcpServer();
      const stop = () => {
        server.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
      await server.start();
      process.stderr.write('[baton] ready (attach)\n');
      await server.closed;
      process.exit(0);
    });
}
