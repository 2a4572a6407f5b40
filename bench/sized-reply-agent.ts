// A minimal ACP agent for the big-result bench: the prompt is a number of characters N, the reply is N ASCII
// characters sent as 256 KiB message chunks (a 10 MiB answer cannot come from a prompt, which is capped far lower).
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';

const CHUNK = 256 * 1024;
const LINE = 'the quick brown fox jumps over the lazy dog 0123456789\n';

const app = acp
  .agent({ name: 'sized-reply-agent' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `sized-${process.pid}` }))
  .onNotification(acp.methods.agent.session.cancel, () => {})
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const size = Number(text);
    if (!Number.isSafeInteger(size) || size < 1) throw acp.RequestError.invalidParams({ prompt: 'a character count' });
    const body = LINE.repeat(Math.ceil(size / LINE.length)).slice(0, size);
    for (let at = 0; at < size; at += CHUNK) {
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: body.slice(at, at + CHUNK) } },
      });
    }
    return { stopReason: 'end_turn' };
  });

const connection = app.connect(
  acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
    { maxMessageBytes: 64 * 1024 * 1024 },
  ),
);
await connection.closed;
process.exit(0);
