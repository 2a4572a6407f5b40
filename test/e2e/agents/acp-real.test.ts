// The ACP adapter with the real Gemini CLI and the real OpenCode, a part each (acp-gemini.ts, acp-opencode.ts) in one
// test process: each part starts its binary once, and a test file's own process costs about half a CPU second.
import './acp-gemini.ts';
import './acp-opencode.ts';
