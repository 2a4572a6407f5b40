import type { Command } from 'commander';
import { redactedError } from '../lib/redact.ts';

export function registerAttachCommand(program: Command): void {
  program
    .command('attach')
    .description(
      'Serve the attach tools over stdio: talk to chats in running OpenCode servers and Codex app-servers at origins ' +
        'listed in BATON_ALLOWED_SERVER_URLS (credentials from OPENCODE_SERVER_PASSWORD / CODEX_REMOTE_TOKEN).',
    )
    .action(async () => {
      // Loaded on use so other commands do not pay for the attach face's start-up.
      const { CrossHarnessMcpServer } = await import('../faces/attach/server.ts');
      (await import('../lib/json-stringify.ts')).useFastJsonStringify();
      const server = new CrossHarnessMcpServer();
      const stdinClosed = new Promise<void>((resolve) => {
        process.stdin.once('end', resolve);
        process.stdin.once('close', resolve);
      });
      const signalled = new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await server.start();
      process.stderr.write('[baton] ready (attach)\n');
      await Promise.race([stdinClosed, signalled]);
      // A failed cleanup is retried once (closes are retryable), then reported; the process exits either way.
      try {
        await server.close().catch(() => server.close());
      } catch (err) {
        process.stderr.write(`[baton] attach: cleanup failed: ${redactedError(err).message}\n`);
        process.exit(1);
      }
      process.exit(0);
    });
}
