// The dashboard's one way to make HTML (rule: dashboard): a tagged template that escapes every interpolated value.
// Agent text, prompts, paths and errors are untrusted, so the only unescaped text is the template's own literal parts and
// fragments that were themselves built by `html` (or, for the page's fixed script and style, named with `trusted`).

/** Markup that is already safe to insert: the result of `html` or `trusted`. Nothing else is inserted unescaped. */
export class SafeHtml {
  readonly #value: string;
  constructor(value: string) {
    this.#value = value;
  }
  toString(): string {
    return this.#value;
  }
}

/** A value the template may hold: text (escaped), a fragment (kept), a list of either, or nothing (dropped). */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function render(v: HtmlValue): string {
  if (v instanceof SafeHtml) return v.toString();
  if (Array.isArray(v)) return v.map(render).join('');
  // false/null/undefined render as nothing so `${cond && html`…`}` reads naturally; true is never meant as text.
  if (v === null || v === undefined || v === false || v === true) return '';
  return String(v).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** `html\`<td>${text}</td>\``: escapes each interpolation for text and for quoted attribute values alike. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** Marks a constant written in this codebase (the page's script and style) as markup. Never for data. */
export function trusted(constant: string): SafeHtml {
  return new SafeHtml(constant);
}
