// Rewrites requirement ids cited in source comments ("(AG-9)", "TE-8: …", "TE-1..TE-11") into the rule names of
// docs/rules.md, and checks that every rule a comment cites exists and every file the index lists is there.
//
//   node scripts/rule-names.ts [--dir src] [--index docs/rules.md]      rewrite comments in place, print a summary
//   node scripts/rule-names.ts --check [--dir src] [--index docs/rules.md]   change nothing; exit 1 on any finding
//
// Only comments change: the TypeScript parser finds them, so an id inside a string or a regex is never touched.
import { existsSync, globSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { commentRanges } from './comments.ts';
import { SPEC_ID as ID } from './spec-ids.ts';

interface Rule {
  name: string;
  /** The requirement id the rule had in the original specification; rules made since have none. */
  id?: string;
  /** Paths from the entry's "Where:" line, relative to the source dir; may hold a `*`. */
  paths: string[];
  /** What is wrong with the entry's shape (no "Where:" line, a list that is not `path`, `path`, …), if anything. */
  malformed?: string;
}

/** One item of a "Where:" list: a backticked path, optionally followed by a backticked name in parentheses. */
const WHERE_ITEM = String.raw`\`[^\`]+\`(?: \(\`[^\`]+\`\))?`;
const WHERE_LIST = new RegExp(`^${WHERE_ITEM}(?:, ${WHERE_ITEM})*$`);

/** Why an entry's text does not end in one well-formed "Where:" list, or undefined when it does. */
function whereProblem(text: string, lines: string[]): string | undefined {
  const whereLines = lines.filter((l) => /\bWhere:/.test(l));
  if (whereLines.length === 0) return 'no "Where:" line';
  if (whereLines.length > 1) return 'more than one "Where:"';
  if (!/^ {2}Where: /.test(whereLines[0]!)) return '"Where:" does not start its own line';
  const list = text.split(' Where: ')[1]!.trim();
  if (!WHERE_LIST.test(list)) return `"Where:" is not a list of \`path\`s separated by ", ": ${list}`;
  return undefined;
}

/**
 * Reads the entries of docs/rules.md: "- `name` (ID): what it asks … Where: `path`, `path`", an entry running until the
 * next entry, blank line or heading. Only backticked words that look like paths count as paths.
 */
function readIndex(indexPath: string): Rule[] {
  const rules: Rule[] = [];
  let current: { rule: Rule; text: string; lines: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    const where = current.text.split(' Where: ')[1] ?? '';
    current.rule.paths = [...where.matchAll(/`([^`]+)`/g)].map((p) => p[1]!).filter((p) => /\/|\.ts$/.test(p));
    current.rule.malformed = whereProblem(current.text, current.lines);
    rules.push(current.rule);
    current = undefined;
  };
  for (const line of readFileSync(indexPath, 'utf8').split('\n')) {
    const head = /^- `([a-z0-9-]+)`(?: \(([A-Z]+-[0-9A-Z]+)\))?: /.exec(line);
    if (head) {
      finish();
      current = { rule: { name: head[1]!, id: head[2], paths: [] }, text: line, lines: [line] };
    } else if (current && /^\s+\S/.test(line)) {
      current.text += ` ${line.trim()}`;
      current.lines.push(line);
    } else finish();
  }
  finish();
  return rules;
}

/** Every .ts file under `dir`, generated code excluded (it cites nothing of ours). */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      if (entry !== 'generated' && entry !== 'node_modules') out.push(...sourceFiles(path));
    } else if (entry.endsWith('.ts')) out.push(path);
  }
  return out.sort();
}

class Renamer {
  private readonly byId: Map<string, Rule>;
  private readonly order: string[];
  readonly unknown = new Set<string>();

  constructor(rules: Rule[]) {
    const withId = rules.filter((r): r is Rule & { id: string } => r.id !== undefined);
    this.byId = new Map(withId.map((r) => [r.id, r]));
    this.order = withId.map((r) => r.id);
  }

  private name(id: string): string | undefined {
    const rule = this.byId.get(id);
    if (!rule) this.unknown.add(id);
    return rule?.name;
  }

  /** `TE-1..TE-11` → every rule from the first to the last, in index order; undefined if either end is unknown. */
  private range(from: string, to: string): string[] | undefined {
    const a = this.order.indexOf(from);
    const b = this.order.indexOf(to);
    if (a < 0 || b < a) {
      for (const id of [from, to]) if (!this.byId.has(id)) this.unknown.add(id);
      return undefined;
    }
    return this.order.slice(a, b + 1).map((id) => this.byId.get(id)!.name);
  }

  /** Rewrites the ids in one comment's text; an id the index does not know is left as it was. */
  rewrite(comment: string): string {
    const item = String.raw`${ID}(?:\.\.${ID})?`;
    // A parenthesised list of ids only: "(AG-9)", "(AT-4, SE-1)", "(TE-1..TE-11, HB-3..HB-5)".
    const group = new RegExp(String.raw`\(\s*(${item}(?:\s*,\s*${item})*)\s*\)`, 'g');
    let out = comment.replace(group, (whole, list: string) => {
      const names: string[] = [];
      for (const part of list.split(/\s*,\s*/)) {
        const [from, to] = part.split('..');
        const named = to ? this.range(from!, to) : [this.name(from!)];
        if (!named || named.includes(undefined)) return whole;
        names.push(...(named as string[]));
      }
      return names.length === 1 ? `(rule: ${names[0]})` : `(rules: ${names.join(', ')})`;
    });
    const cite = (id: string, whole: string) => {
      const name = this.name(id);
      return name ? `rule \`${name}\`` : whole;
    };
    // A range in running text.
    out = out.replace(new RegExp(String.raw`(${ID})\.\.(${ID})`, 'g'), (whole, from: string, to: string) => {
      const named = this.range(from, to);
      return named ? named.map((n) => `rule \`${n}\``).join(', ') : whole;
    });
    // "under AG-9's rule" → "under rule `isolated-homes`"; any other bare id → "rule `name`".
    out = out.replace(new RegExp(`(${ID})'s rule`, 'g'), (whole, id: string) => cite(id, whole));
    out = out.replace(new RegExp(ID, 'g'), (id) => cite(id, id));
    // "rule `x`: …" opening a comment or a sentence reads as "Rule `x`: …".
    return out.replace(/(^|\/\/ |\/\*\* |\n\s*\* |\. )rule `/g, '$1Rule `');
  }
}

const WIDTH = 120;

/**
 * Names are longer than ids, so a comment line the rewrite pushed past the line width is wrapped: the words past the
 * width move to the start of the next line of the same comment, or to a new line when the next one starts something
 * else (a blank comment line, a list item, code). A one-line JSDoc becomes a block. Code lines are left alone.
 */
function wrapLong(before: string, after: string): string {
  const old = before.split('\n');
  const lines = after.split('\n');
  const touched = new Set(lines.map((l, i) => (l !== old[i] ? i : -1)).filter((i) => i >= 0));
  /** Keeps `touched` pointing at the same lines after `count` lines were inserted below line `at`. */
  const shift = (at: number, count: number) => {
    const moved = [...touched].map((t) => (t > at ? t + count : t));
    touched.clear();
    for (const t of moved) touched.add(t);
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!touched.has(i) || line.length <= WIDTH) continue;
    const oneLineDoc = /^(\s*)\/\*\* (.*) \*\/$/.exec(line);
    if (oneLineDoc) {
      const indent = oneLineDoc[1]!;
      lines.splice(i, 1, `${indent}/**`, `${indent} * ${oneLineDoc[2]}`, `${indent} */`);
      shift(i, 2);
      touched.add(i + 1);
      continue;
    }
    const m = /^(\s*(?:\/\/|\*) )(.*)$/.exec(line);
    if (!m) continue;
    const prefix = m[1]!;
    const room = WIDTH - prefix.length;
    const cut = m[2]!.lastIndexOf(' ', room);
    if (cut <= 0) continue; // one unbreakable word
    const keep = m[2]!.slice(0, cut);
    const rest = m[2]!.slice(cut + 1);
    lines[i] = prefix + keep;
    const next = lines[i + 1];
    const continues =
      next?.startsWith(prefix) === true &&
      /^\S/.test(next.slice(prefix.length)) &&
      !/^[-*•]|^\d+[.)] /.test(next.slice(prefix.length));
    if (continues) lines[i + 1] = `${prefix}${rest} ${next.slice(prefix.length)}`;
    else {
      lines.splice(i + 1, 0, prefix + rest);
      shift(i, 1);
    }
    touched.add(i + 1);
  }
  return lines.join('\n');
}

/** Rule names a comment cites, in either written form. */
function citedNames(comment: string): string[] {
  const names: string[] = [];
  for (const m of comment.matchAll(/\(rules?: ([a-z0-9, -]+)\)/g)) names.push(...m[1]!.split(/,\s*/));
  for (const m of comment.matchAll(/\brule `([a-z0-9-]+)`/g)) names.push(m[1]!);
  return names;
}

function main(): number {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string', default: 'src' },
      index: { type: 'string', default: 'docs/rules.md' },
      check: { type: 'boolean', default: false },
    },
  });
  const dir = resolve(values.dir);
  const rules = readIndex(resolve(values.index));
  if (rules.length === 0) throw new Error(`no rules found in ${values.index}`);
  const names = new Set(rules.map((r) => r.name));
  const renamer = new Renamer(rules);
  const findings: string[] = [];
  let changedFiles = 0;
  let citations = 0;

  for (const file of sourceFiles(dir)) {
    const text = readFileSync(file, 'utf8');
    let out = '';
    let at = 0;
    for (const [start, end] of commentRanges(file, text)) {
      const comment = text.slice(start, end);
      const where = `${relative(process.cwd(), file)}:${text.slice(0, start).split('\n').length}`;
      const bare = comment.match(new RegExp(ID, 'g')) ?? [];
      citations += bare.length;
      if (values.check) {
        for (const id of bare) findings.push(`${where}: bare id ${id}; run scripts/rule-names.ts to name it`);
        for (const n of citedNames(comment)) if (!names.has(n)) findings.push(`${where}: unknown rule "${n}"`);
        continue;
      }
      out += text.slice(at, start) + renamer.rewrite(comment);
      at = end;
    }
    if (values.check) continue;
    out = wrapLong(text, out + text.slice(at));
    if (out !== text) {
      writeFileSync(file, out);
      changedFiles++;
    }
  }

  if (values.check) {
    for (const rule of rules) {
      if (rule.malformed) findings.push(`${values.index}: ${rule.name}: ${rule.malformed}`);
      // Only the specification's requirement ids stand beside a name; anything else is a tracker's number.
      if (rule.id && !new RegExp(`^${ID}$`).test(rule.id))
        findings.push(`${values.index}: ${rule.name}: (${rule.id}) is not a requirement id of the specification`);
      for (const path of rule.paths) {
        const found = path.includes('*') ? globSync(path, { cwd: dir }).length > 0 : existsSync(join(dir, path));
        if (!found) findings.push(`${values.index}: ${rule.name} lists ${path}, which is not under ${values.dir}`);
      }
    }
    for (const f of findings) console.error(f);
    console.log(`${rules.length} rules; ${findings.length} finding(s)`);
    return findings.length === 0 ? 0 : 1;
  }
  for (const id of renamer.unknown) console.error(`not in ${values.index}: ${id} (left as it was)`);
  console.log(`${citations} id citation(s) renamed in ${changedFiles} file(s)`);
  return renamer.unknown.size === 0 ? 0 : 1;
}

process.exitCode = main();
