// Text hygiene shared by every place that shows agent-produced text to a caller (rules: commentary-only,
// fail-closed-status).
import { cutCodePoints, stripTerminalControls } from './chars.ts';
import { redact } from './redact.ts';

export { cutCodePoints, stripTerminalControls };

/** Maximum length of a status line, in Unicode code points (rule: fail-closed-status). */
export const STATUS_MAX_CODE_POINTS = 200;
/** Longer than any credential redact() knows: what is cut off here cannot hide the end of one that shows. */
const REDACT_MARGIN_CODE_POINTS = 1_024;

/**
 * A one-line, control-free, redacted status of at most 200 code points (rule: fail-closed-status). Redacted before the
 * cut: a secret that straddles the cut would otherwise show its first part, too short to be recognised afterwards.
 */
export function statusLine(text: string): string {
  const line = stripTerminalControls(text).replace(/\s+/g, ' ').trim();
  return cutCodePoints(
    redact(cutCodePoints(line, STATUS_MAX_CODE_POINTS + REDACT_MARGIN_CODE_POINTS)),
    STATUS_MAX_CODE_POINTS,
  );
}
