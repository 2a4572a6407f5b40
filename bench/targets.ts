// Delegation through each execution target: the scripted ACP agent on a git repository, one hub with three agents that
// differ only in their target — `local` with the fence off, `local` with the secrets fence (bubblewrap, the default)
// and `sandbox` (read-only host). The ratios are what the fences add to a whole delegation (docs/targets.md).
import { homedir } from 'node:os';
import { join } from 'node:path';
import { connectCaller, startHub } from '../test/support/hub.ts';
import {
  delegate,
  expectText,
  hubEnv,
  makeGitRepo,
  SCRIPTED_AGENT_COMMAND,
  SHORT_ANSWER,
  SHORT_PROMPT,
} from './common.ts';
import {
  atMost,
  type BenchOptions,
  type Cleanup,
  interleave,
  ratioOfMedians,
  type Section,
  series,
  timed,
} from './harness.ts';

export async function targets(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const git = makeGitRepo(join(dir, 'git'));
  const agent = { kind: 'acp', command: SCRIPTED_AGENT_COMMAND };
  const hub = await startHub(
    cleanup,
    {
      dir,
      roots: [git],
      agents: {
        open: { ...agent, target: 'open' },
        fenced: { ...agent, target: 'local' },
        boxed: { ...agent, target: 'box' },
      },
      targets: { open: { kind: 'local', fence: false }, box: { kind: 'sandbox' } },
    },
    // A compile cache outside /tmp, where a user's lives (~/.cache): a sandbox's /tmp is private, and a Node agent
    // whose cache sat there would compile itself afresh at every start (about 100 ms for this agent).
    { ...hubEnv(), NODE_COMPILE_CACHE: join(homedir(), '.cache', 'baton-node-compile-cache') },
  );
  const client = await connectCaller(cleanup, hub, 'alice');
  const side = (name: string) => () =>
    timed(async () => expectText((await delegate(client, SHORT_PROMPT, git, name)).text, SHORT_ANSWER));
  const notes: string[] = [];
  const s = await interleave(
    opts.runs,
    { open: side('open'), fenced: side('fenced'), boxed: side('boxed') },
    { ms: 40_000, notes },
  );
  await hub.stop();
  return {
    name: 'targets',
    title: 'Hub delegation, scripted ACP agent on a git repo, by execution target (run → wait → result)',
    series: [
      series('local, fence off', 'ms', s.open!),
      series('local, secrets fence', 'ms', s.fenced!),
      series('sandbox', 'ms', s.boxed!),
    ],
    checks: [
      atMost('secrets fence / no fence (median)', ratioOfMedians(s.fenced!, s.open!), 1.1),
      atMost('sandbox / no fence (median)', ratioOfMedians(s.boxed!, s.open!), 1.15),
    ],
    notes,
  };
}
