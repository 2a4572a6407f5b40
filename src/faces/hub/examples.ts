// Client snippets (rules: hub-commands, working-snippets): written in the config's connections/ dir, tokens only in a
// private tokens.env whose `export` lines reach the clients a shell launches after sourcing it.
import { join } from 'node:path';
import { writePrivateFile } from '../../lib/private-fs.ts';
import type { HubConfig } from './config.ts';

export function tokenEnvName(caller: string): string {
  return `BATON_TOKEN_${caller.toUpperCase().replace(/-/g, '_')}`;
}

export function connectionsDir(cfg: HubConfig): string {
  return cfg.connectionsDirPath;
}

/** Writes tokens.env and one snippet per client kind; returns the files written. Prints nothing itself. */
export function writeExamples(cfg: HubConfig): { dir: string; tokensFile: string; files: string[] } {
  const dir = connectionsDir(cfg);
  const base = `http://${cfg.listen.host === '0.0.0.0' ? '127.0.0.1' : cfg.listen.host}:${cfg.listen.port}`;
  const url = (caller: string) => `${base}/mcp/${caller}`;
  const tokensFile = join(dir, 'tokens.env');
  const lines = Object.entries(cfg.callers).map(([c, v]) => `export ${tokenEnvName(c)}=${v.token}`);
  writePrivateFile(tokensFile, `${lines.join('\n')}\n`);
  const files = [tokensFile];
  const put = (name: string, text: string) => {
    const p = join(dir, name);
    writePrivateFile(p, text);
    files.push(p);
  };
  const callers = Object.keys(cfg.callers);
  if (callers.includes('claude')) {
    put(
      'claude.mcp.json',
      `${JSON.stringify(
        {
          mcpServers: {
            baton: {
              type: 'http',
              url: url('claude'),
              headers: { Authorization: `Bearer \${${tokenEnvName('claude')}}` },
            },
          },
        },
        null,
        2,
      )}\n`,
    );
  }
  if (callers.includes('codex')) {
    put(
      'codex.toml',
      `# Merge into ~/.codex/config.toml\n[mcp_servers.baton]\nurl = "${url('codex')}"\nbearer_token_env_var = "${tokenEnvName('codex')}"\ntool_timeout_sec = 60\n`,
    );
  }
  if (callers.includes('opencode')) {
    put(
      'opencode.json',
      `${JSON.stringify(
        {
          $schema: 'https://opencode.ai/config.json',
          mcp: {
            baton: {
              type: 'remote',
              url: url('opencode'),
              headers: { Authorization: `Bearer {env:${tokenEnvName('opencode')}}` },
            },
          },
        },
        null,
        2,
      )}\n`,
    );
  }
  if (callers.includes('gemini')) {
    put(
      'gemini.settings.json',
      `${JSON.stringify(
        {
          mcpServers: {
            baton: { httpUrl: url('gemini'), headers: { Authorization: `Bearer \${${tokenEnvName('gemini')}}` } },
          },
        },
        null,
        2,
      )}\n`,
    );
  }
  if (callers.includes('dsh')) {
    put(
      'dsh.patch.yml',
      `# Apply to your DeepSeek Harness profile\nmcp:\n  servers:\n    baton:\n      transport: streamable-http\n      url: ${url('dsh')}\n      headers:\n        Authorization: "Bearer \${${tokenEnvName('dsh')}}"\n`,
    );
  }
  return { dir, tokensFile, files };
}
