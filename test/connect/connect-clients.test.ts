// `baton connect` with the real Claude Code, Gemini CLI and OpenCode, each then delegating through the hub: one test
// process and one hub for the three (a test file's process and a hub start each cost about half a CPU second), the
// clients' tests in a part each. Every client works under its own directory of the shared temp dir and has its own
// caller on the hub.
import './connect-claude.ts';
import './connect-gemini.ts';
import './connect-opencode.ts';
