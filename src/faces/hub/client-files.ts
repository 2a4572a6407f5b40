// The user's own client files, as `connect` and `disconnect` read and edit them: JSON (with the comments and trailing
// commas clients write), one TOML table, and writes that keep the file's mode.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname } from 'node:path';

export class ConnectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectError';
  }
}

export const home = (env: NodeJS.ProcessEnv) => env.HOME || homedir();

/** A JSON file's object, or undefined when it is missing or not plain JSON (the caller says what it could not read). */
export function readJsonFile(path: string): Record<string, unknown> | undefined {
  const text = readIfExists(path);
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(plainJson(text).json) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** The lines of TOML table `[table]` (header excluded), or undefined when there is no such table. */
export function tomlTable(text: string, table: string): string[] | undefined {
  const lines = text.split('\n');
  const headerRe = tomlHeaderRe(table);
  const start = lines.findIndex((l) => headerRe.test(l));
  if (start < 0) return undefined;
  let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  return lines.slice(start + 1, end);
}

export function tomlString(lines: string[], key: string): string | undefined {
  const re = new RegExp(`^\\s*(?:${esc(key)}|"${esc(key)}")\\s*=\\s*"([^"]*)"`);
  for (const l of lines) {
    const m = re.exec(l);
    if (m) return m[1];
  }
  return undefined;
}

export function parseJsonObject(
  path: string,
  text: string | undefined,
  fresh: Record<string, unknown> = {},
): Record<string, unknown> {
  if (text === undefined || !text.trim()) return fresh;
  const { json, comments } = plainJson(text);
  // Rewriting a file with comments would drop them: the user's words are not baton's to delete.
  if (comments)
    throw new ConnectError(`${path} has comments; remove them (or make this change by hand) and run this again`);
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    throw new ConnectError(`${path} is not plain JSON (${(err as Error).message}); fix it and run this again`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ConnectError(`${path}: not a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * JSON with comments (JSONC) as plain JSON: comments and trailing commas taken out, strings left as they are. OpenCode
 * writes a trailing comma into a config it edits, so its own files need this to be read at all.
 */
function plainJson(text: string): { json: string; comments: boolean } {
  let out = '';
  let comments = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      out += text.slice(start, i + 1);
    } else if (c === '/' && text[i + 1] === '/') {
      comments = true;
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && text[i + 1] === '*') {
      comments = true;
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 1;
      out += ' ';
    } else if (c === ',' && isTrailingComma(text, i)) {
      // Dropped.
    } else out += c;
  }
  return { json: out, comments };
}

/** Whether the comma at `at` is followed, past white space, by the end of its object or array. */
function isTrailingComma(text: string, at: number): boolean {
  let j = at + 1;
  while (j < text.length && /\s/.test(text[j]!)) j++;
  return text[j] === '}' || text[j] === ']';
}

export function objectAt(path: string, json: Record<string, unknown>, key: string): Record<string, unknown> {
  const v = json[key] ?? {};
  if (typeof v !== 'object' || Array.isArray(v) || v === null)
    throw new ConnectError(`${path}: "${key}" is not an object`);
  json[key] = v;
  return v as Record<string, unknown>;
}

/**
 * Sets `key = value` in the TOML table `[table]` of a file Codex has just written (Codex writes each server as its own
 * `[mcp_servers.NAME]` table). Only that table's lines are touched; a missing table is an error.
 */
export function setTomlTableKey(path: string, text: string, table: string, key: string, value: string): string {
  const lines = text.split('\n');
  const headerRe = tomlHeaderRe(table);
  const start = lines.findIndex((l) => headerRe.test(l));
  if (start < 0) throw new ConnectError(`${path}: no [${table}] table after registering it; nothing was changed`);
  let end = lines.findIndex((l, i) => i > start && /^\s*\[/.test(l));
  if (end < 0) end = lines.length;
  const keyRe = new RegExp(`^\\s*(?:${esc(key)}|"${esc(key)}")\\s*=`);
  const body = lines.slice(start + 1, end).filter((l) => !keyRe.test(l));
  return [...lines.slice(0, start + 1), `${key} = ${value}`, ...body, ...lines.slice(end)].join('\n');
}

function tomlHeaderRe(table: string): RegExp {
  const dotted = table.split('.');
  return new RegExp(
    `^\\s*\\[\\s*${dotted.map((p) => `(?:${esc(p)}|"${esc(p)}")`).join('\\s*\\.\\s*')}\\s*\\]\\s*(?:#.*)?$`,
  );
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Writes one of the user's own client files atomically (temp file + rename) without changing a mode: an existing
 * file keeps its mode (or `mode`, when putting a file back), a new one gets the user's umask default, and missing
 * parent dirs are created as the umask says. baton's own files are private (lib/private-fs.ts); these are not baton's.
 */
export function writeUserFile(path: string, text: string, mode?: number): void {
  const keep = mode ?? (existsSync(path) ? statSync(path).mode & 0o7777 : undefined);
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, text, { flag: 'wx' });
    if (keep !== undefined) chmodSync(tmp, keep);
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

export function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}
