// `baton store check|backup|restore`: inspect the store the way the hub's start does, copy it, or put a copy
// back. The state dir comes from the same config resolution every command uses.
import type { Command } from 'commander';
import { loadHubConfig } from './hub-config.ts';

const out = (s: string) => process.stdout.write(`${s}\n`);

export function registerStoreCommand(program: Command): void {
  const config = () => loadHubConfig(program.opts<{ config?: string }>().config);
  // The store code (node:sqlite, the engine's store) is loaded only by these commands (rule: lazy-commands).
  const storeCode = () => import('../core/store-backup.ts');
  const store = program
    .command('store')
    .description("Check, back up or restore the hub's task store (baton.db in the state dir).");

  store
    .command('check')
    .description(
      'Run PRAGMA integrity_check and every row checksum, compare the store with its marker and check every backup; exits 1 when the store or a backup is damaged.',
    )
    .action(async () => {
      const cfg = await config();
      const { checkStore } = await storeCode();
      const report = checkStore(cfg.stateDirPath);
      for (const l of report.lines) out(l);
      if (!report.ok) process.exitCode = 1;
    });

  store
    .command('backup')
    .description(
      'Write a consistent copy (VACUUM INTO) to <stateDir>/backups, verified before it gets its name; works while the hub runs.',
    )
    .action(async () => {
      const cfg = await config();
      const { backupStore } = await storeCode();
      const b = backupStore(cfg.stateDirPath, cfg.backups.keep);
      out(`backup written: ${b.path} (${b.size} bytes); keeping the newest ${cfg.backups.keep}`);
    });

  store
    .command('restore')
    .argument('<backup>', 'a backup name from `baton store check` (or a path)')
    .option('--force', 'restore a copy that is broken, foreign, of another schema or older than the store')
    .description(
      'Replace the store with a backup (the hub must be stopped); refuses a copy that would lose data unless --force; the replaced files are kept beside it.',
    )
    .action(async (name: string, opts: { force?: boolean }) => {
      const cfg = await config();
      const { listBackups, restoreStore } = await storeCode();
      const r = restoreStore(cfg.stateDirPath, name, opts.force === true);
      if (r.lost) out(`forced: ${r.lost}`);
      out(`restored ${r.from}: ${r.tasks} task(s)`);
      if (r.keptAs) out(`the replaced store is kept as ${r.keptAs}`);
      const others = listBackups(cfg.stateDirPath).length;
      out(`${others} backup(s) remain in the backups dir`);
    });
}
