/**
 * vCard import (issue 5, beyond the spec, for users off macOS): `.vcf` files of vCard 2.1, 3.0 or 4.0
 * (parsed by ical.js, which implements RFC 6350 and the 3.0 grammar; 2.1 is rewritten as 3.0 by
 * vcard-lines.ts, which also lets one unreadable property be skipped) become contact cards and go
 * through the same contact pipeline as the host collector: either in-process through a Catalog or
 * over HTTP to a running gateway's POST /catalog/contacts/ingest.
 *
 * `memex import contacts.vcf` is wired by the CLI to `importVcfCommand(argv)`.
 */
import fs from 'node:fs';
import path from 'node:path';
import ICAL from 'ical.js';
import type { Catalog } from '../catalog/catalog.ts';
import type { ContactIngestResponseT, PersonPayloadT } from '../schemas/people.ts';
import { sha256Hex } from '../util/hash.ts';
import { ingestContacts } from './contacts.ts';
import { resolveServerTarget, type ServerTarget } from '../client/target.ts';
import { read } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';
import { vcardTexts, type CardText, type VcfProblem } from './vcard-lines.ts';

export type { VcfProblem };

/** Largest .vcf accepted (cards with embedded photos are big, but not this big). */
export const MAX_VCF_BYTES = 256 * 1024 * 1024;
const LABEL_NOISE = new Set(['internet', 'pref', 'voice', 'x400', 'text', 'msg']);

export interface VcfParseResult {
  cards: PersonPayloadT[];
  /** Cards that could not be read (no name, no identifier and nothing else usable). */
  rejected: number;
  /** Properties left out because they could not be read, and cards rejected, with where and why. */
  problems: VcfProblem[];
}

type Prop = InstanceType<typeof ICAL.Property>;

function strings(v: unknown): string[] {
  if (Array.isArray(v)) return v.flatMap(strings);
  if (v === null || v === undefined) return [];
  return [String(v)];
}

function first(v: unknown): string | null {
  const s = strings(v).map((x) => x.trim()).find(Boolean);
  return s ?? null;
}

/** TYPE parameters minus the noise words; "pref" (3.0) or PREF=1 (4.0) marks the preferred value. */
function labelAndPriority(prop: Prop, groupLabels: Map<string, string>): { label: string | null; priority: number } {
  const types = strings(prop.getParameter('type')).flatMap((t) => t.split(',')).map((t) => t.trim().toLowerCase());
  const pref = types.includes('pref') || String(prop.getParameter('pref') ?? '') === '1';
  const group = (prop.toJSON()[1] as { group?: string }).group;
  const label = (group && groupLabels.get(group.toLowerCase())) || types.find((t) => t && !LABEL_NOISE.has(t)) || null;
  return { label, priority: pref ? 1 : 100 };
}

/** Apple's `_$!<Mobile>!$_` labels read as `mobile`. */
function cleanLabel(s: string): string {
  return s.replace(/^_\$!<(.+)>!\$_$/, '$1').trim().toLowerCase();
}

/** One vCard (any version) as a PersonPayloadModel, or null when nothing identifies it. */
export function cardToPayload(jcard: unknown[]): PersonPayloadT | null {
  const comp = new ICAL.Component(jcard as any);
  const props = comp.getAllProperties();
  const groupLabels = new Map<string, string>();
  for (const p of props) {
    const group = (p.toJSON()[1] as { group?: string }).group;
    if (p.name === 'x-ablabel' && group) groupLabels.set(group.toLowerCase(), cleanLabel(String(p.getFirstValue())));
  }
  const get = (name: string) => props.filter((p) => p.name === name);
  const n = get('n')[0]?.getFirstValue() as unknown;
  const nParts = Array.isArray(n) ? n.map((x) => first(x)) : [first(n)];
  const family = nParts[0] ?? null;
  const given = nParts[1] ?? null;
  const org = first(get('org')[0]?.getFirstValue());
  const fn = first(get('fn')[0]?.getFirstValue());
  const emails = get('email')
    .map((p) => ({ value: first(p.getFirstValue()) ?? '', ...labelAndPriority(p, groupLabels) }))
    .filter((e) => e.value)
    .map((e) => ({ value: e.value.replace(/^mailto:/i, ''), value_raw: e.value, label: e.label, priority: e.priority }));
  const phones = get('tel')
    .map((p) => ({ value: first(p.getFirstValue()) ?? '', ...labelAndPriority(p, groupLabels) }))
    .filter((t) => t.value)
    .map((t) => ({ value: t.value.replace(/^tel:/i, ''), value_raw: t.value.replace(/^tel:/i, ''), label: t.label, priority: t.priority }));
  const addresses = get('adr').map((p) => {
    const v = p.getFirstValue() as unknown;
    const parts = Array.isArray(v) ? v.map((x) => strings(x).join(' ').trim() || null) : [null, null, first(v)];
    const [pobox, ext, street, city, region, postal, country] = parts;
    const streetLine = [pobox, ext, street].filter(Boolean).join(', ') || null;
    return { label: labelAndPriority(p, groupLabels).label, street: streetLine, city: city ?? null, region: region ?? null, postal_code: postal ?? null, country: country ?? null };
  });
  const urls = get('url')
    .map((p) => ({ label: labelAndPriority(p, groupLabels).label, url: first(p.getFirstValue()) }))
    .filter((u) => u.url);
  const nicknames = get('nickname').flatMap((p) => p.getValues().flatMap(strings)).map((s) => s.trim()).filter(Boolean);
  // ical.js reads a 3.0 NOTE as a list split at unescaped commas, which exporters write in prose: the values
  // are joined back, so a note is never cut at its first comma.
  const notes = get('note').map((p) => strings(p.getValues()).join(',').trim()).filter(Boolean).join('\n') || null;
  const photo = first(get('photo')[0]?.getFirstValue());
  const display = fn ?? ([given, family].filter(Boolean).join(' ') || org || emails[0]?.value || phones[0]?.value || null);
  if (!display) return null;
  const uid = first(get('uid')[0]?.getFirstValue());
  // Without a UID the card's identity is its name and identifiers, so a re-import finds it again.
  const externalId =
    uid ?? `vcf:${sha256Hex([display, given, family, org, ...emails.map((e) => e.value), ...phones.map((p) => p.value)].join('\u0000')).slice(0, 32)}`;
  return {
    external_id: externalId,
    display_name: display,
    given_name: given,
    family_name: family,
    organization: org,
    nicknames,
    notes,
    photo_hash: photo ? sha256Hex(photo) : null,
    emails,
    phones,
    addresses,
    urls: urls as { label: string | null; url: string }[],
    version: 1,
    deleted: false,
  };
}

/** ical.js's jCard of one card; properties it cannot read are left out and reported. */
function parseCard(card: CardText, problems: VcfProblem[]): unknown[] | null {
  try {
    return ICAL.parse(card.text) as unknown[];
  } catch {
    /* find the properties at fault below */
  }
  const version = /\r\nVERSION:(\S+)\r\n/.exec(card.text)?.[1] ?? '3.0';
  const readable: string[] = [];
  for (const p of card.properties) {
    try {
      ICAL.parse(`BEGIN:VCARD\r\nVERSION:${version}\r\n${p.text}\r\nEND:VCARD\r\n`);
      readable.push(p.text);
    } catch (err) {
      problems.push({ card: card.index, line: p.line, property: p.name, reason: (err as Error).message.slice(0, 200) });
    }
  }
  try {
    return ICAL.parse(['BEGIN:VCARD', `VERSION:${version}`, ...readable, 'END:VCARD'].join('\r\n') + '\r\n') as unknown[];
  } catch (err) {
    problems.push({ card: card.index, line: card.properties[0]?.line ?? 0, property: 'VCARD', reason: (err as Error).message.slice(0, 200) });
    return null;
  }
}

/**
 * Parses the text of a .vcf file (one or many cards, vCard 2.1, 3.0 or 4.0). A property that cannot be
 * read is skipped and listed in `problems`; a card with nothing usable counts as rejected. Throws when the
 * text holds no card at all.
 */
export function parseVcf(text: string): VcfParseResult {
  const texts = vcardTexts(text);
  if (texts.length === 0) throw new Error('no BEGIN:VCARD … END:VCARD card found');
  const cards: PersonPayloadT[] = [];
  const problems: VcfProblem[] = [];
  let rejected = 0;
  const seen = new Set<string>();
  for (const t of texts) {
    const jcard = parseCard(t, problems);
    let card: PersonPayloadT | null = null;
    try {
      card = jcard ? cardToPayload(jcard) : null;
    } catch (err) {
      problems.push({ card: t.index, line: t.properties[0]?.line ?? 0, property: 'VCARD', reason: (err as Error).message.slice(0, 200) });
    }
    if (!card) {
      rejected += 1;
      continue;
    }
    // The same UID twice in one file: the later card wins.
    if (seen.has(card.external_id)) cards.splice(cards.findIndex((c) => c.external_id === card.external_id), 1);
    seen.add(card.external_id);
    cards.push(card);
  }
  return { cards, rejected, problems };
}

export interface ImportVcfOptions {
  /** In-process pipeline (tests, the server itself). */
  catalog?: Catalog;
  /** Or a running gateway, e.g. http://127.0.0.1:8085. */
  gatewayUrl?: string;
  /** Bearer token for the gateway (CATALOG_TOKEN, or AUTH_TOKEN when no catalog token is set). */
  token?: string;
  /** Contact source name; default `vcard`. */
  source?: string;
  /** Device id the change token is kept under; default the file name. */
  deviceId?: string;
  /** Cards per request. */
  batchSize?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface ImportVcfResult extends Omit<ContactIngestResponseT, 'since_token_next'> {
  cards: number;
  rejected: number;
  problems: VcfProblem[];
}

/** Reads a .vcf file and sends its cards through the contact pipeline; counts are summed. */
export async function importVcf(file: string, opts: ImportVcfOptions): Promise<ImportVcfResult> {
  const stat = fs.statSync(file);
  if (!stat.isFile()) throw new Error(`${file} is not a file`);
  if (stat.size > MAX_VCF_BYTES) throw new Error(`${file} is larger than ${MAX_VCF_BYTES} bytes`);
  let parsed: VcfParseResult;
  try {
    parsed = parseVcf(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file} is not a readable vCard file: ${(err as Error).message}`);
  }
  return importCards(parsed, { deviceId: path.basename(file), ...opts });
}

export async function importCards(parsed: VcfParseResult, opts: ImportVcfOptions): Promise<ImportVcfResult> {
  if (!opts.catalog && !opts.gatewayUrl) throw new Error('importVcf needs a catalog or a gatewayUrl');
  const total = { accepted: 0, upserts: 0, deletes: 0, conflicts: 0, skipped: 0 };
  const blocked: ImportVcfResult['blocked'] = [];
  const size = opts.batchSize ?? 200;
  const source = opts.source ?? 'vcard';
  const deviceId = opts.deviceId ?? 'vcard-import';
  opts.onProgress?.(0, parsed.cards.length);
  for (let i = 0; i < parsed.cards.length; i += size) {
    const people = parsed.cards.slice(i, i + size);
    const req = { source, device_id: deviceId, batch_id: `vcf-${i / size}`, since_token: null, people };
    const res = opts.catalog ? await ingestContacts(opts.catalog, req) : await postBatch(opts.gatewayUrl!, opts.token, req);
    for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += res[k];
    // Older gateways do not answer `blocked`.
    for (const b of res.blocked ?? []) blocked.push({ ...b, index: i + b.index });
    opts.onProgress?.(Math.min(i + size, parsed.cards.length), parsed.cards.length);
  }
  return { ...total, blocked, cards: parsed.cards.length, rejected: parsed.rejected, problems: parsed.problems };
}

/**
 * The import's coverage run (docs/coverage.md): every card of the file in one state — added or updated (stored:
 * new), unchanged, kept out by the block list (blocked), unreadable or in conflict (failed). Cards are counted, not
 * named. Never fails the import.
 */
async function reportContactsCoverage(
  file: string,
  source: string,
  r: ImportVcfResult,
  gatewayUrl: string,
  token: string | undefined,
  started: Date,
  out: NodeJS.WriteStream,
): Promise<void> {
  const { RunRecorder } = await import('../coverage/recorder.ts');
  const { httpCoverageReporter } = await import('../coverage/reporter.ts');
  const rec = new RunRecorder({ collector: 'contacts', source_type: 'contact', source_account_id: source, source_ref: path.resolve(file) });
  (rec as { startedAt: Date }).startedAt = started;
  const blocked = r.blocked.length;
  const stored = Math.min(r.upserts, r.cards);
  const unchanged = Math.max(0, Math.min(r.skipped - blocked, r.cards - stored));
  const conflicts = Math.min(r.conflicts, r.cards - stored - unchanged);
  const blockedN = Math.min(blocked, r.cards - stored - unchanged - conflicts);
  rec.addBulk('new', stored);
  rec.addBulk('unchanged', unchanged);
  rec.addBulk('failed', conflicts + r.rejected);
  rec.addBulk('skipped', blockedN, 'blocked');
  // Cards the server's answer does not account for (an older server): waiting for the next import.
  rec.addBulk('pending', r.cards - stored - unchanged - conflicts - blockedN);
  const reporter = httpCoverageReporter({ url: gatewayUrl, token, timeoutMs: 15_000, log: { warn: () => out.write('memex import: coverage not recorded\n') } });
  await reporter.sendRun(rec.report({ cursor: { cards: r.cards, unreadable_cards: r.rejected } }));
}

async function postBatch(base: string, token: string | undefined, body: unknown): Promise<ContactIngestResponseT> {
  const res = await fetch(new URL('/catalog/contacts/ingest', base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`gateway answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as ContactIngestResponseT;
}

/**
 * `memex import <file.vcf> [--url URL] [--token T] [--source NAME] [--device ID]`, with a
 * progress bar on a terminal. Returns the process exit code.
 */
export async function importVcfCommand(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  out: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  const args = [...argv];
  const opt = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  let target: ServerTarget;
  try {
    target = resolveServerTarget({ url: opt('--url'), gateway: opt('--gateway'), token: opt('--token') }, env, (m) =>
      out.write(`memex import: ${m}\n`),
    );
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  // The contact route sits behind the catalog token, which is the gateway token unless the server sets its own.
  const token = target.tokenSource === '--token' ? target.token : (read(env, SERVER_SETTINGS.CATALOG_TOKEN) ?? target.token);
  const gatewayUrl = target.url;
  const source = opt('--source');
  const deviceId = opt('--device');
  const file = args.find((a) => !a.startsWith('--'));
  if (!file || args.some((a) => a.startsWith('--'))) {
    out.write('usage: memex import <contacts.vcf> [--url URL] [--token TOKEN] [--source NAME] [--device ID]\n');
    return 2;
  }
  // cli-progress ships no type declarations; it is only needed on a terminal.
  const progressModule = 'cli-progress';
  const { default: cliProgress } = (await import(progressModule)) as { default: any };
  const bar = out.isTTY ? new cliProgress.SingleBar({ stream: out, format: 'contacts [{bar}] {value}/{total}' }, cliProgress.Presets.shades_classic) : null;
  const started = new Date();
  try {
    const r = await importVcf(file, {
      gatewayUrl,
      token,
      source,
      deviceId,
      onProgress: (done, total) => {
        if (!bar) return;
        if (done === 0) bar.start(total, 0);
        else bar.update(done);
      },
    });
    bar?.stop();
    for (const p of r.problems.slice(0, 20)) out.write(`card ${p.card}, line ${p.line}: ${p.property} skipped (${p.reason})\n`);
    if (r.problems.length > 20) out.write(`… and ${r.problems.length - 20} more unreadable properties\n`);
    out.write(
      `${r.cards} cards read (${r.rejected} unreadable, ${r.problems.length} properties skipped): ${r.upserts} added or updated, ${r.skipped - r.blocked.length} unchanged, ` +
        `${r.blocked.length ? `${r.blocked.length} kept out (forgotten with a block), ` : ''}${r.conflicts} conflicts\n`,
    );
    await reportContactsCoverage(file, source ?? 'vcard', r, gatewayUrl, target.token, started, out);
    return r.conflicts > 0 ? 1 : 0;
  } catch (err) {
    bar?.stop();
    out.write(`import failed: ${(err as Error).message}\n`);
    return 1;
  }
}
