// Where a profiled process spent its CPU: reads a V8 .cpuprofile (node --cpu-prof) and prints self time per function
// and per module (baton's own files by path, dependencies by package, node internals, GC, idle), largest first.
//
//   BENCH_HUB_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/hub-prof" npm run bench -- --only throughput --runs 5
//   node bench/profile-summary.ts /tmp/hub-prof/CPU.*.cpuprofile [--top N]
//
// With several files, the one with the most samples is summarised (the hub, when only the hub was profiled).
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 30;
if (args.length === 0) {
  process.stderr.write('usage: node bench/profile-summary.ts <file.cpuprofile>... [--top N]\n');
  process.exit(2);
}
const profiles = args.map((f) => ({ f, p: JSON.parse(readFileSync(f, 'utf8')) as Profile }));
const { f: file, p: profile } = profiles.reduce((a, b) => (b.p.samples.length > a.p.samples.length ? b : a));

/** A module label: baton's own file, a package name, or a node/V8 bucket. */
function moduleOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 14).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url;
}

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const byFunction = new Map<string, number>();
const byModule = new Map<string, number>();
let total = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
  if (functionName === '(idle)') {
    idle += us;
    continue;
  }
  total += us;
  const mod = moduleOf(url, functionName);
  const key = `${functionName || '(anonymous)'}  ${mod}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  byModule.set(mod, (byModule.get(mod) ?? 0) + us);
}

const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle`);
print('self time by module', byModule);
print('self time by function', byFunction);
