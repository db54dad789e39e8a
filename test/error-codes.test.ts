/**
 * The error table (src/util/error-codes.ts) and what is written from it: docs/errors.md must be what
 * scripts/error-docs.ts writes, and every error the gateway answers with takes its status and body from the table.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, renderErrorCodesBlock } from '../src/util/error-codes.ts';
import { InvalidRequestError, MemexError, NotFoundError, UsageError } from '../src/util/errors.ts';
import { memexErrorBody } from '../src/gateway/errors.ts';

const root = path.join(import.meta.dirname, '..');

describe('docs/errors.md', () => {
  it('is what scripts/error-docs.ts writes from the table', () => {
    const page = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8');
    expect(page).toContain('<!-- error-codes -->');
    expect(page, 'docs/errors.md differs from src/util/error-codes.ts: run node --import tsx scripts/error-docs.ts').toBe(renderErrorCodesBlock(page));
  });

  it('lists every code', () => {
    const page = fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8');
    for (const code of Object.keys(ERROR_CODES)) expect(page).toContain(`| \`${code}\` |`);
  });
});

describe('the table', () => {
  it('gives each code a status and a meaning, and a 422 type only to 422 codes', () => {
    for (const [code, e] of Object.entries(ERROR_CODES) as [string, { status: number; meaning: string; type?: string }][]) {
      expect(e.status, code).toBeGreaterThanOrEqual(400);
      expect(e.status, code).toBeLessThan(600);
      expect(e.meaning.length, code).toBeGreaterThan(10);
      if (e.type !== undefined) expect(e.status, code).toBe(422);
    }
  });

  it('decides an error\'s status and body', () => {
    expect(new NotFoundError('Document not found').status).toBe(404);
    expect(memexErrorBody(new NotFoundError('Document not found'))).toEqual({ detail: 'Document not found' });
    expect(memexErrorBody(new UsageError('bad'))).toEqual({ detail: 'bad', error_code: 'USAGE' });
    expect(memexErrorBody(new InvalidRequestError({ loc: ['query', 'q'], msg: 'Query must contain text', type: 'string_too_short' }))).toEqual({
      detail: [{ loc: ['query', 'q'], msg: 'Query must contain text', type: 'string_too_short' }],
    });
    expect(memexErrorBody(new InvalidRequestError([{ loc: ['body', 'a'], msg: 'one' }, { loc: ['body', 'b'], msg: 'two' }]))).toEqual({
      detail: [{ loc: ['body', 'a'], msg: 'one', type: 'value_error' }, { loc: ['body', 'b'], msg: 'two', type: 'value_error' }],
    });
    expect(memexErrorBody(new MemexError('empty', 'INGEST.EMPTY_TEXT'))).toEqual({ detail: [{ loc: ['body'], msg: 'empty', type: 'INGEST.EMPTY_TEXT' }] });
    const envelope = memexErrorBody(new MemexError('old', 'PEOPLE.STALE_VERSION')) as { detail: string; error: { error_code: string; retryable: boolean } };
    expect(envelope.detail).toBe('old');
    expect(envelope.error).toMatchObject({ error_code: 'PEOPLE.STALE_VERSION', message: 'old', retryable: false });
    // `retryable` is the code's in the table (a truncated upload: send it again), or the error's own.
    const retry = (err: MemexError) => (memexErrorBody(err, 'gw_ingest_file') as { error: { retryable: boolean; correlation_id: string } }).error;
    expect(retry(new MemexError('cut short', 'INGEST.FILE_READ_FAILED'))).toMatchObject({ retryable: true, correlation_id: expect.stringMatching(/^gw_ingest_file_/) });
    expect(retry(new MemexError('cut short', 'INGEST.FILE_READ_FAILED', undefined, { retryable: false })).retryable).toBe(false);
    expect(retry(new MemexError('too many', 'INGEST.MULTIPART_LIMIT')).retryable).toBe(false);
  });
});

describe('the rules the table keeps', () => {
  const files = (dir: string): string[] =>
    fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.join(dir, e.name);
      return e.isDirectory() ? files(rel) : rel.endsWith('.ts') ? [rel] : [];
    });
  const source = files('src').map((f) => ({ file: f, text: fs.readFileSync(path.join(root, f), 'utf8') }));

  it('lets no new error class extend Error itself: each has a code from the table', () => {
    const direct = source.flatMap(({ file, text }) => [...text.matchAll(/class (\w+) extends Error\b/g)].map((m) => `${file}: ${m[1]}`));
    expect(direct.sort()).toEqual(
      [
        'src/util/errors.ts: MemexError',
        // Its `code` is the OCR failure kind (busy, timeout…) the agent's OCR route maps to a status.
        'src/ocr/engine.ts: OcrError',
        // What a client of the API met: the answer's status and body (or none), not an error of memex's own.
        'src/client/errors.ts: ClientError',
      ].sort(),
    );
  });

  const routes = source.filter(({ file }) => /^src\/gateway\/(routes\/)?[^/]+\.ts$|^src\/catalog\/routes\.ts$/.test(file) && file !== 'src/gateway/errors.ts');

  it('leaves the gateway\'s routes no 4xx to write by hand: they throw and src/gateway/errors.ts answers', () => {
    const byHand = routes.flatMap(({ file, text }) => [...text.matchAll(/\.(?:code|status)\(\s*4\d\d\s*\)/g)].map(() => file));
    expect(byHand).toEqual([]);
  });

  it('lets no route define an error writer of its own (a `sendError(reply, status, code, …)`)', () => {
    // A status decided at run time is an error's: `.code(status)`, `.code(err.statusCode)`. Successes pick theirs
    // from literals (`.code(ok ? 202 : 207)`).
    const chosen = routes.flatMap(({ file, text }) => [...text.matchAll(/\.(?:code|status)\(\s*[A-Za-z_$][\w$.]*\s*\)/g)].map((m) => `${file}: ${m[0]}`));
    // A function given the reply that builds an error body.
    const writers = routes.flatMap(({ file, text }) =>
      [...text.matchAll(/function (\w+)\(([^)]*)\)[^{]*\{([^]*?)\n\}/g)]
        .filter((m) => /FastifyReply/.test(m[2]) && /errorEnvelope\(|detail:|error_code/.test(m[3]))
        .map((m) => `${file}: ${m[1]}`),
    );
    expect([...chosen, ...writers]).toEqual([]);
  });
});
