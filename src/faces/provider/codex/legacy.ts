// Codex ≤ 0.153: a passthrough to Codex's own `codex mcp-server` (rule `codex-provider` legacy path). Frames are
// forwarded as whole lines, byte-for-byte, except: tools/list answers are rewritten to the curated schemas plus the job
// tools; curated `codex` / `codex-reply` calls are validated (-32602 locally) and translated to the native arguments;
// the typed unauthorized event is replaced by one structured tool error. Everything the bridge injects (errors,
// progress, recovered results) is written between native lines, never inside one.
import { createLegacyBridge, type LegacyOptions } from './legacy-bridge.ts';

export type { LegacyOptions } from './legacy-bridge.ts';

/** Serves the legacy passthrough on this process's stdin/stdout until the client goes away or a signal arrives. */
export async function runLegacyPassthrough(opts: LegacyOptions): Promise<void> {
  // The bridge runs on stream and child events only; this keeps the process alive until teardown exits it.
  const keepalive = setInterval(() => {}, 1 << 30);
  const bridge = createLegacyBridge(opts, {
    clientIn: process.stdin,
    clientOut: process.stdout,
    exit: (code) => {
      clearInterval(keepalive);
      process.exit(code);
    },
  });
  process.once('SIGTERM', () => void bridge.teardown('SIGTERM', 143));
  process.once('SIGINT', () => void bridge.teardown('SIGINT', 130));
  process.stderr.write('[baton] ready (provider: codex)\n');
}
