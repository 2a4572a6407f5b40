// `baton connect` with the real Claude Code, Gemini CLI and OpenCode, each then delegating through the hub, and Claude
// Code speaking MCP 2026-07-28 to that hub: one test process and one hub for all (a test file's process and a hub start
// each cost about half a CPU second), in a part each. Every part works under its own directory of the shared temp dir;
// each client has its own caller on the hub.
import './connect-claude.ts';
import './connect-gemini.ts';
import './connect-opencode.ts';
import './claude-2026.ts';
