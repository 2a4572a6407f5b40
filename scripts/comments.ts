// Where the comments of a TypeScript file are, for the scripts that read or rewrite comments only (rule-names.ts,
// repo-check.ts): the parser finds them, so a `//` inside a string, a regex or a template is never taken for one.
import ts from 'typescript';

/** [start, end) of every comment in a TypeScript or JavaScript file, in order. */
export function commentRanges(fileName: string, text: string): Array<[number, number]> {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const seen = new Map<number, number>();
  const visit = (node: ts.Node) => {
    // JSDoc nodes sit inside a comment; the comment itself is the next token's leading trivia.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length === 0) {
      for (const c of ts.getLeadingCommentRanges(text, node.pos) ?? []) seen.set(c.pos, c.end);
      return;
    }
    for (const child of children) visit(child);
  };
  visit(source);
  for (const c of ts.getLeadingCommentRanges(text, source.endOfFileToken.pos) ?? []) seen.set(c.pos, c.end);
  return [...seen.entries()].sort((a, b) => a[0] - b[0]);
}
