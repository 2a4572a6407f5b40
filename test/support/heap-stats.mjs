// `node --import <this file>`: on SIGUSR2 the process writes V8's heap space statistics, as JSON, to $BATON_HEAP_STATS
// (written beside it and renamed, so a reader never sees half a file). For tests that look inside a daemon's heap.
import { renameSync, writeFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';

const out = process.env.BATON_HEAP_STATS;
if (out) {
  process.on('SIGUSR2', () => {
    writeFileSync(`${out}.part`, JSON.stringify(getHeapSpaceStatistics()));
    renameSync(`${out}.part`, out);
  });
}
