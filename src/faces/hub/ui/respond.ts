// How the dashboard answers: pages under a strict CSP whose nonce admits only the page's own style and script element,
// fragments for a page already open, and plain text or JSON for scripts. Nothing is cached and nothing may frame a page.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SafeHtml } from './html.ts';

/** A page and the nonce its CSP allows for its one style and script element. */
export interface Rendered {
  html: string;
  nonce: string;
}

export function sendHtml(res: ServerResponse, status: number, { html: body, nonce }: Rendered): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(body);
}

/** Rows for a page that is already open: the page's CSP governs them, and they hold no script. */
export function sendFragment(res: ServerResponse, fragment: SafeHtml): void {
  const body = String(fragment);
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  });
  res.end(body);
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(body);
}

export function isForm(req: IncomingMessage): boolean {
  return String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
}
