// The requirement ids of the specification (/work/shared/SPEC.md): the only "LETTERS-digits" ids the repository
// writes as its own. scripts/rule-names.ts turns them into rule names; scripts/repo-check.ts refuses any other id of
// that shape unless it is a standard's or another project's name (EXTERNAL_ID_PREFIXES).

/** The prefixes of the specification's requirement ids (AG-1, TE-8, HB-S2, ...). */
export const SPEC_ID_PREFIXES = ['AG', 'TE', 'HB', 'P', 'AT', 'LB', 'SE', 'UX', 'TS'];

/** A requirement id of the specification, as a regular expression source. */
export const SPEC_ID = String.raw`\b(?:${SPEC_ID_PREFIXES.join('|')})-[0-9A-Z]+\b`;

/**
 * Names other people gave that have the same shape: encodings and hashes (UTF-8, SHA-256, CRC-32), the MCP
 * specification's enhancement proposals (SEP-2663), model names (GPT-5), standards (ISO-8601, RFC-9110).
 */
export const EXTERNAL_ID_PREFIXES = ['UTF', 'SHA', 'CRC', 'SEP', 'GPT', 'ISO', 'RFC'];
