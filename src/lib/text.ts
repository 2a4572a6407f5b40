// Text hygiene shared by every place that shows agent-produced text to a caller (TE-5, TE-6).

/** Maximum length of a status line, in Unicode code points (TE-6). */
export const STATUS_MAX_CODE_POINTS = 200;

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

/** A one-line, control-free status of at most 200 code points (TE-6). */
export function statusLine(text: string): string {
  return cutCodePoints(stripTerminalControls(text).replace(/\s+/g, ' ').trim(), STATUS_MAX_CODE_POINTS);
}
