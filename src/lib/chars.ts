// Character-level helpers with no dependencies, shared by the redactor and the text hygiene built on it (text.ts).

// CSI, OSC (BEL or ST terminated), other two-byte escapes, and remaining C0/C1 controls except \n and \t.
const TERMINAL_CONTROL =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function stripTerminalControls(text: string): string {
  return text.replace(TERMINAL_CONTROL, '');
}

/** The first `max` code points of `text` (never splits a surrogate pair). */
export function cutCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let out = '';
  let n = 0;
  for (const ch of text) {
    if (n++ >= max) break;
    out += ch;
  }
  return out;
}

/**
 * Orders strings by UTF-16 code unit, as `<` does (git lists paths in this order). String#localeCompare would load
 * ICU's collator, about 3 MiB of resident memory, into a daemon that only needs a stable order.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
