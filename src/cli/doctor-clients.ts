// `baton doctor`'s client checks: for each client that has a baton entry (user scope, or the project scope of this
// directory): where it is registered, whether the variable its token comes from is set in this environment, and whether
// the hub answers that endpoint with that token. Each failure names the one fix. The hub is asked without a session
// (a GET with the bearer): a wrong token is refused before anything else, and nothing is created on the hub.
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { CLIENTS, type ClientName } from '../faces/hub/client-names.ts';
import type { HubConfig } from '../faces/hub/config.ts';

export interface ClientCheck {
  client: ClientName;
  ok: boolean;
  line: string;
}

const PROBE_TIMEOUT_MS = 5_000;

export async function checkClients(cfg: HubConfig, env: NodeJS.ProcessEnv, cwd: string): Promise<ClientCheck[]> {
  const { findRegistrations } = await import('../faces/hub/client-registrations.ts');
  const { CLIENT_INFO } = await import('../faces/hub/clients.ts');
  const { readListenRecord } = await import('../faces/hub/listen-record.ts');
  const tokensFile = join(cfg.connectionsDirPath, 'tokens.env');
  const running = readListenRecord(cfg.stateDirPath);
  const checks: ClientCheck[] = [];
  for (const client of CLIENTS) {
    const scopes = client === 'codex' ? (['user'] as const) : (['user', 'project'] as const);
    for (const scope of scopes) {
      for (const reg of findRegistrations(client, scope, ['baton'], { cwd, env })) {
        const where = `${client} (${scope} scope, ${reg.file})`;
        const fail = (problem: string, fix: string) =>
          checks.push({ client, ok: false, line: `FAIL  ${where}: ${problem}; fix: ${fix}` });
        const reconnect = `\`baton connect ${client}${scope === 'project' ? ' --scope project' : ''}\``;
        if (!reg.url || !reg.tokenVar) {
          fail('the entry names no hub endpoint or token variable', reconnect);
          continue;
        }
        const token = env[reg.tokenVar];
        if (!token) {
          fail(
            `$${reg.tokenVar} is not set in this environment, so ${CLIENT_INFO[client].binary} starts without baton's tools`,
            `\`source ${tokensFile}\` in the shell that starts ${CLIENT_INFO[client].binary} (or add that line to its profile)`,
          );
          continue;
        }
        const status = await probe(reg.url, token).catch((err: Error) => err);
        if (status instanceof Error) {
          const elsewhere =
            running && !reg.url.startsWith(`http://${running.host}:${running.port}/`)
              ? ` (the hub runs on http://${running.host}:${running.port}, started with --port)`
              : '';
          fail(
            `the hub is not answering at ${reg.url}${elsewhere}`,
            elsewhere ? `\`baton stop\`, then \`baton start\` without --port` : '`baton start`',
          );
        } else if (status === 401) {
          fail(
            `the hub at ${reg.url} refused the token in $${reg.tokenVar} (not this hub's token for "${client}")`,
            `\`source ${tokensFile}\` again in the shell that starts ${CLIENT_INFO[client].binary}`,
          );
        } else if (status === 404) {
          fail(`${reg.url} is not a baton hub endpoint`, reconnect);
        } else {
          checks.push({
            client,
            ok: true,
            line: `ok    ${where}: $${reg.tokenVar} is set and the hub answers ${reg.url} with it`,
          });
        }
      }
    }
  }
  return checks;
}

/** The status the endpoint answers a session-less GET with; rejects when nothing answers. */
async function probe(url: string, token: string): Promise<number> {
  const { request } = process.getBuiltinModule('node:http');
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, {
      method: 'GET',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
      agent: false,
      signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
    });
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
  res.resume();
  return res.statusCode ?? 0;
}
