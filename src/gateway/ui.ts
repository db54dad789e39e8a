/**
 * The web UI on the gateway's port: the built assets of ui/ (dist/ui, made by `npm run build:ui`)
 * with a strict Content-Security-Policy, and the one-time codes of its sign-in link. The UI is a client
 * of the public API like any other, signed in by a web session (src/gateway/sessions.ts, docs/ui.md).
 * Sign-in takes the token in a password field, or a one-time code from the link `memex serve` prints on
 * loopback; the code is in the URL's fragment (never sent to a server or written to its logs) and is
 * worth nothing once used.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { safeEqual } from '../util/hash.ts';
import { NotFoundError } from '../util/errors.ts';

/** dist/ui of this checkout. */
export const DEFAULT_UI_DIR = fileURLToPath(new URL('../../dist/ui', import.meta.url));

/** No inline script or style, nothing from another origin, no blob: (stored bytes are shown from the server). */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  // pdf.js's worker (ui/src/viewers.tsx), a module file of the build.
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** One-time sign-in codes: random, single use, for a limited time. Only hashes are kept. */
export class SignInCodes {
  private readonly codes = new Map<string, number>();
  constructor(readonly ttlMs = 24 * 3600_000) {}

  issue(now = Date.now()): string {
    const code = crypto.randomBytes(24).toString('base64url');
    this.codes.set(hash(code), now + this.ttlMs);
    return code;
  }

  /** True once for a code issued here and not expired; the code is spent either way. */
  redeem(code: string, now = Date.now()): boolean {
    const h = hash(code);
    let found: string | undefined;
    // Compare against every stored hash in constant time rather than by map lookup.
    for (const k of this.codes.keys()) if (safeEqual(k, h)) found = k;
    if (!found) return false;
    const expires = this.codes.get(found)!;
    this.codes.delete(found);
    return expires > now;
  }
}

function hash(s: string): string {
  return crypto.createHash('sha256').update(s).digest('hex');
}

/**
 * What `memex serve` says at start about signing in to the web UI: the one-time link when its stderr is a
 * terminal; else (a log file, a journal, a pipe: they keep what they are given) how to get one.
 */
export function signInNotice(url: string, toTerminal: boolean, issue: () => string): string {
  if (!toTerminal) return `memex web UI: ${url} (for a one-time sign-in link run \`memex signin-link\`)\n`;
  return `\nmemex web UI: ${url}/#signin=${issue()}\n(one-time sign-in link; afterwards sign in with the token)\n\n`;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

interface Asset {
  body: Buffer;
  type: string;
}

function loadAssets(dir: string): Map<string, Asset> | null {
  const index = path.join(dir, 'index.html');
  if (!fs.existsSync(index)) return null;
  const assets = new Map<string, Asset>();
  assets.set('index.html', { body: fs.readFileSync(index), type: 'text/html; charset=utf-8' });
  const assetDir = path.join(dir, 'assets');
  if (fs.existsSync(assetDir)) {
    for (const name of fs.readdirSync(assetDir)) {
      const type = TYPES[path.extname(name)];
      if (type) assets.set(`assets/${name}`, { body: fs.readFileSync(path.join(assetDir, name)), type });
    }
  }
  return assets;
}

function pageHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', UI_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin');
}

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>memex</title></head>
<body><h1>memex</h1><p>The web UI is not built in this checkout: run <code>npm run build:ui</code> (npm ci does it too).
The HTTP API is served as usual; its description is at <a href="/openapi.json">/openapi.json</a>.</p></body></html>`;

/** Routes without the bearer guard: the page and its assets (signing in: src/gateway/sessions.ts). */
export async function uiRoutes(app: FastifyInstance, opts: { dir: string }): Promise<void> {
  // Read once at start: the assets are small and immutable between builds.
  const assets = loadAssets(opts.dir);

  app.get('/', { schema: { hide: true } }, async (_req, reply) => {
    const index = assets?.get('index.html');
    pageHeaders(reply).header('cache-control', 'no-cache');
    if (!index) return reply.code(503).type('text/html; charset=utf-8').send(NOT_BUILT);
    return reply.type(index.type).send(index.body);
  });

  app.get<{ Params: { name: string } }>('/assets/:name', { schema: { hide: true } }, async (req, reply) => {
    const asset = assets?.get(`assets/${req.params.name}`);
    if (!asset) throw new NotFoundError('Not found');
    // File names carry a content hash: cache for good.
    return pageHeaders(reply).header('cache-control', 'public, max-age=31536000, immutable').type(asset.type).send(asset.body);
  });
}
