// `node --import <this file>`: appends the URL of every module the process loads, one a line, to $BATON_MODULE_LOG,
// as it loads, so a test can read what a start loaded without waiting for the process to exit.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const log = process.env.BATON_MODULE_LOG;
if (log) {
  registerHooks({
    load(url, context, next) {
      appendFileSync(log, `${url}\n`);
      return next(url, context);
    },
  });
}
