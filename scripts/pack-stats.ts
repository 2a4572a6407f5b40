// What `npm pack` would put in the tarball, measured rather than typed into the docs: files, packed and unpacked size.
// Run through `npm run pack:stats`, which builds dist/ first; it packs nothing to disk (--dry-run) and runs no
// package script (--ignore-scripts), so the figures are those of the dist/ just built.
//
//   node scripts/pack-stats.ts [--json]
import { execFileSync } from 'node:child_process';

const [info] = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }),
) as { name: string; version: string; entryCount: number; size: number; unpackedSize: number }[];
if (!info) throw new Error('npm pack --dry-run --json printed no package');
const stats = {
  package: `${info.name}@${info.version}`,
  files: info.entryCount,
  packed: info.size,
  unpacked: info.unpackedSize,
};
if (process.argv.includes('--json')) console.log(JSON.stringify(stats));
else {
  const kB = (n: number) => `${(n / 1000).toFixed(0)} kB`;
  console.log(`${stats.package}: ${stats.files} files, ${kB(stats.packed)} packed, ${kB(stats.unpacked)} unpacked`);
}
