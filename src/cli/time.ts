// Times the CLI prints: the reader's local time with its UTC offset (`Z` when that is UTC), never an unmarked UTC time
// (rule: operator-cli).

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, '0');

function offset(d: Date): string {
  const minutes = -d.getTimezoneOffset();
  if (minutes === 0) return 'Z';
  return `${minutes < 0 ? '-' : '+'}${pad(Math.trunc(minutes / 60))}:${pad(minutes % 60)}`;
}

/** `2026-12-03 11:04:50+01:00`; with `date: false` only `11:04:50+01:00`. Anything unparsable is shown as given. */
export function localTime(iso: unknown, opts: { date?: boolean } = {}): string {
  if (typeof iso !== 'string') return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${offset(d)}`;
  if (opts.date === false) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}
