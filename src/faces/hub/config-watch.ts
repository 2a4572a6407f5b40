// The running hub's view of its config file: only roots apply live. Editors and `baton roots` replace the file by
// rename, which a file watch would miss, so the config's dir is watched; the engine also asks at every admission, so a
// root added a moment ago is honoured even before the watcher fires.
import { type FSWatcher, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from '../../lib/log.ts';
import { redactError } from '../../lib/redact.ts';
import { type HubConfig, loadConfig } from './config.ts';

/** Config keys a running hub does not re-apply (roots do apply). */
const RESTART_KEYS = ['listen', 'stateDir', 'control', 'callers', 'agents', 'limits', 'logLevel', 'backups'] as const;

export class ConfigWatch {
  readonly #config: HubConfig;
  readonly #logger: Logger;
  /** Authorised roots (real paths); replaced when the config file changes. */
  #roots: string[];
  #stamp: string | null;
  #watcher: FSWatcher | undefined;

  constructor(config: HubConfig, logger: Logger) {
    this.#config = config;
    this.#logger = logger;
    this.#roots = config.rootsReal;
    this.#stamp = stampOf(config.path);
  }

  /** Roots the hub authorises right now (real paths). */
  get roots(): string[] {
    return this.#roots;
  }

  /** Starts watching the config's dir; a failure to watch is logged, and roots then apply at the next admission. */
  start(): void {
    const name = basename(this.#config.path);
    try {
      this.#watcher = watch(dirname(this.#config.path), { persistent: false }, (_event, file) => {
        if (file === null || file === name) this.refresh();
      });
      this.#watcher.on('error', (err) => {
        this.#logger.warn('config watch stopped; root changes apply at the next agent_run', {
          error: redactError(err),
        });
      });
    } catch (err) {
      this.#logger.warn('cannot watch the config; root changes apply at the next agent_run', {
        error: redactError(err),
      });
    }
  }

  /**
   * Re-reads the config when its file changed (inode, size or mtime). Only roots apply live; a config that fails
   * validation keeps the previous roots, and changes to anything else are logged as needing a restart.
   */
  refresh(): void {
    const stamp = stampOf(this.#config.path);
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    let next: HubConfig;
    try {
      next = loadConfig(this.#config.location);
    } catch (err) {
      this.#logger.warn('config change refused; keeping the previous roots', { reason: redactError(err) });
      return;
    }
    if (next.rootsReal.join('\0') !== this.#roots.join('\0')) {
      this.#roots = next.rootsReal;
      this.#logger.info('roots reloaded', { roots: this.#roots });
    }
    const changed = RESTART_KEYS.filter((k) => JSON.stringify(next[k]) !== JSON.stringify(this.#config[k]));
    if (changed.length)
      this.#logger.warn('config changes that need a restart (`baton stop`, `baton start`)', { changed });
  }

  close(): void {
    this.#watcher?.close();
  }
}

function stampOf(path: string): string | null {
  try {
    const st = statSync(path);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return null;
  }
}
