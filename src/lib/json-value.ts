// Shapes of parsed JSON that several readers check by hand (a frame from a child, a config read without its schema).

/** A JSON object: not null, not an array. */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
