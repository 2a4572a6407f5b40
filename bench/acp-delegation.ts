// Hub delegation with the scripted ACP test agent vs the ACP SDK client driving the same agent directly, on a git
// repository and on a plain dir. No model is involved, so the ratio is the hub's own overhead (HTTP, SQLite commits,
// scheduling, git snapshots).
import { join } from 'node:path';
import {
  delegate,
  directAcp,
  expectText,
  makeGitRepo,
  makePlainDir,
  SCRIPTED_AGENT_COMMAND,
  SHORT_ANSWER,
  SHORT_PROMPT,
  scriptedHub,
} from './common.ts';
import {
  atMost,
  type BenchOptions,
  type Cleanup,
  info,
  interleave,
  ratioOfMedians,
  type Section,
  series,
  timed,
} from './harness.ts';

export async function acpDelegation(opts: BenchOptions, dir: string, cleanup: Cleanup): Promise<Section> {
  const git = makeGitRepo(join(dir, 'git'));
  const plain = makePlainDir(join(dir, 'plain'));
  const { hub, client } = await scriptedHub(cleanup, dir, [git, plain]);
  const hubSide = (cwd: string) => () =>
    timed(async () => expectText((await delegate(client, SHORT_PROMPT, cwd)).text, SHORT_ANSWER));
  const directSide = (cwd: string) => () =>
    timed(async () => expectText(await directAcp(SCRIPTED_AGENT_COMMAND, cwd, SHORT_PROMPT), SHORT_ANSWER));
  const notes: string[] = [];
  const s = await interleave(
    opts.runs,
    {
      hubGit: hubSide(git),
      directGit: directSide(git),
      hubPlain: hubSide(plain),
      directPlain: directSide(plain),
    },
    { ms: 40_000, notes },
  );
  await hub.stop();
  const gitRatio = ratioOfMedians(s.hubGit!, s.directGit!);
  const plainRatio = ratioOfMedians(s.hubPlain!, s.directPlain!);
  return {
    name: 'acp',
    title: 'Hub delegation, scripted ACP agent, vs the ACP SDK client driving it directly (run → wait → result)',
    series: [
      series('hub, git repo', 'ms', s.hubGit!),
      series('direct, git repo', 'ms', s.directGit!),
      series('hub, plain dir', 'ms', s.hubPlain!),
      series('direct, plain dir', 'ms', s.directPlain!),
    ],
    checks: [
      atMost('hub / direct, git repo (median)', gitRatio, 1.25),
      info('hub / direct, plain dir (median)', plainRatio),
    ],
    notes,
  };
}
