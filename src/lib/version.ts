// The release number a CLI prints in its `--version` output ("2.1.3 (Claude Code)", "opencode 1.18.33", "v0.61.0").
// Loose on purpose: it finds the first MAJOR.MINOR.PATCH[-prerelease] anywhere in the text, for display. Codex, whose
// version gates behaviour, has its own strict parser (src/codex/version.ts).

const RELEASE_IN_TEXT = /(?<![\d.])\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?/;

/** The first release number in `text`, or undefined. */
export function findVersion(text: string): string | undefined {
  return RELEASE_IN_TEXT.exec(text)?.[0];
}
