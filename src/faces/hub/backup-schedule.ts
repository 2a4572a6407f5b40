// Online backups of the store every `backups.intervalHours` while the hub runs: the next one is due an interval after
// the newest copy, at once when a store with tasks has none. An empty store is not copied.
import type { Store } from '../../core/store.ts';
import { backupInto, listBackups } from '../../core/store-backup.ts';
import type { Logger } from '../../lib/log.ts';
import { redactError } from '../../lib/redact.ts';
import type { HubConfig } from './config.ts';

export interface BackupScheduleOptions {
  store: Store;
  stateDir: string;
  /** Hours between copies (0: no scheduled backups) and how many copies to keep. */
  backups: HubConfig['backups'];
  logger: Logger;
}

export class BackupSchedule {
  readonly #opts: BackupScheduleOptions;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(opts: BackupScheduleOptions) {
    this.#opts = opts;
  }

  start(): void {
    this.#schedule(true);
  }

  /** No backup starts after this (one being written finishes first: it is synchronous). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(atStart: boolean): void {
    const { store, stateDir, logger } = this.#opts;
    const { intervalHours, keep } = this.#opts.backups;
    if (!intervalHours || this.#stopped) return;
    const interval = intervalHours * 3_600_000;
    const newest = listBackups(stateDir)[0];
    const hasTasks = () => Object.values(store.stats()).some((n) => n > 0);
    const delay = newest ? newest.mtimeMs + interval - Date.now() : atStart && hasTasks() ? 0 : interval;
    this.#timer = setTimeout(
      () => {
        if (this.#stopped) return;
        if (hasTasks()) {
          try {
            const b = backupInto(store.db, stateDir, keep);
            logger.info('backup written', { path: b.path, bytes: b.size, keep });
          } catch (err) {
            logger.error('backup failed', { error: redactError(err) });
          }
        }
        this.#schedule(false);
      },
      Math.min(Math.max(0, delay), 2 ** 31 - 1),
    );
    this.#timer.unref();
  }
}
