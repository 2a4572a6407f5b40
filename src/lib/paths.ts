// Path containment on real paths: the check behind authorised roots and baton's own private dirs (rule `roots-only`).
import { realpathSync } from 'node:fs';
import { basename, dirname, resolve, sep } from 'node:path';

/** True when `child` is `parent` or lies below it (both absolute and already resolved). */
export function isWithin(parent: string, child: string): boolean {
  if (child === parent) return true;
  return child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/**
 * The real path of `path` even when its tail does not exist yet (a state dir not created so far): the longest existing
 * prefix is resolved through its symlinks and the rest is appended, so containment checks see through links.
 */
export function realish(path: string): string {
  let cur = resolve(path);
  const tail: string[] = [];
  for (;;) {
    try {
      return resolve(realpathSync(cur), ...tail.reverse());
    } catch {
      const parent = dirname(cur);
      if (parent === cur) return resolve(path);
      tail.push(basename(cur));
      cur = parent;
    }
  }
}
