/**
 * What the notes, browser and Takeout importers share: the verb's options (`--url`, `--token`), the gateway
 * client, documents sent in batches to POST /v1/ingest:batch with each answer told to the coverage recorder,
 * and one line of totals. The gateway decides what is new: the same text and metadata again is a duplicate
 * (nothing stored), a change of either is a new version of the document (src/catalog/prepare.ts).
 */
import { createGatewayClient, GatewayHttpError, type GatewayClient } from '../agent/gateway-client.ts';
import { resolveServerTarget, type ServerTarget } from '../client/target.ts';
import type { RunRecorder } from '../coverage/recorder.ts';
import { reportImportRun } from '../coverage/reporter.ts';
import type { IngestRequestT } from '../schemas/ingest.ts';

export interface Output {
  write(s: string): unknown;
  isTTY?: boolean;
}

export interface ImportIo {
  out?: Output;
  env?: NodeJS.ProcessEnv;
  /**
   * The `memex import mail` verb, for an archive that holds mail (a Takeout's mbox): given by the CLI, which owns
   * the verb (src/cli/import-mail.ts), so the importers take nothing from the room above them.
   */
  mailImport?: MailImportVerb;
}

/** `memex import mail ARGS…` run in-process, writing to `out`/`err`; its exit code. */
export type MailImportVerb = (argv: string[], io: { out: Output; err: Output; env: NodeJS.ProcessEnv }) => Promise<number>;

export interface CommonArgs {
  path: string;
  url?: string;
  gateway?: string;
  token?: string;
  /** Other `--name value` options, for the importer to read. */
  options: Map<string, string>;
  /** `--flag` options without a value. */
  flags: Set<string>;
}

/** Flags (options without a value) the importers of this folder take. */
const FLAGS = new Set(['--help', '-h']);

/** `memex import PATH [--url URL] [--token TOKEN] [--name value]…`; throws a usage message. */
/**
 * The start of every importer command: where it writes, its environment and its arguments, or the exit code 2
 * after a usage error (written with `usage`).
 */
export function startImport(argv: string[], io: ImportIo, usage: string): { out: Output; env: NodeJS.ProcessEnv; args: CommonArgs } | number {
  const out = io.out ?? process.stderr;
  try {
    return { out, env: io.env ?? process.env, args: parseCommonArgs(argv) };
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n${usage}\n`);
    return 2;
  }
}

export function parseCommonArgs(argv: string[]): CommonArgs {
  const options = new Map<string, string>();
  const flags = new Set<string>();
  const paths: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (FLAGS.has(a)) flags.add(a);
    else if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      if (eq > 0) options.set(a.slice(0, eq), a.slice(eq + 1));
      else {
        if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
        options.set(a, argv[++i]);
      }
    } else paths.push(a);
  }
  if (paths.length !== 1) throw new Error(paths.length ? `one PATH only (got ${paths.length})` : 'PATH is required');
  const take = (k: string) => {
    const v = options.get(k);
    options.delete(k);
    return v;
  };
  return { path: paths[0], url: take('--url'), gateway: take('--gateway'), token: take('--token'), options, flags };
}

export interface Connection {
  target: ServerTarget;
  client: GatewayClient;
}

export function connect(args: CommonArgs, env: NodeJS.ProcessEnv, warn: (m: string) => void): Connection {
  const target = resolveServerTarget({ url: args.url, gateway: args.gateway, token: args.token }, env, warn);
  return { target, client: createGatewayClient({ baseUrl: target.url, authToken: target.token, authTokenSource: target.tokenSource }) };
}

/** One document to send and the ref it is known by in the coverage report (a path, a URL). */
export interface OutgoingDocument {
  ref: string;
  request: IngestRequestT;
}

export interface SendTotals {
  new: number;
  updated: number;
  unchanged: number;
  failed: number;
  pending: number;
  /** The first 50 documents the gateway refused, with its reason. */
  refusals: { ref: string; error: string }[];
}

interface BatchBody {
  results?: Array<{
    index: number;
    status_code: number;
    submission: { duplicate?: boolean; version_number?: number; skipped?: string } | null;
    error: { error_code?: string; message?: string; detail?: unknown } | null;
  }>;
}

const BATCH_DOCS = 200;
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Sends documents in batches (at most 200 documents or 4 MB each), two batches in flight, and records every
 * answer in `run`. A batch the gateway refuses as a whole is sent again one document at a time, so one bad
 * document never keeps the others out. Gateway unavailable: the documents stay pending (sent again next run).
 */
export async function sendDocuments(
  client: GatewayClient,
  docs: Iterable<OutgoingDocument>,
  run: RunRecorder,
  onProgress?: (done: number) => void,
): Promise<SendTotals> {
  const totals: SendTotals = { new: 0, updated: 0, unchanged: 0, failed: 0, pending: 0, refusals: [] };
  let done = 0;
  const record = (d: OutgoingDocument, status: number, sub: NonNullable<BatchBody['results']>[number]['submission'], error: string | null) => {
    if (!error && sub) {
      run.answered(d.ref, { status: 'accepted', duplicate: sub.duplicate, versionNumber: sub.version_number, skipped: sub.skipped ?? null });
      if (sub.skipped || sub.duplicate) totals.unchanged++;
      else if ((sub.version_number ?? 1) > 1) totals.updated++;
      else totals.new++;
    } else if (status === -1 || status === 429 || status >= 500 || status === 401 || status === 403) {
      run.answered(d.ref, { status: 'retry', error });
      totals.pending++;
    } else {
      run.answered(d.ref, { status: 'rejected', error });
      totals.failed++;
      if (totals.refusals.length < 50) totals.refusals.push({ ref: d.ref, error: error ?? 'refused' });
    }
    done++;
  };
  const sendOne = async (d: OutgoingDocument) => {
    try {
      const res = await client.submitDocument<NonNullable<BatchBody['results']>[number]['submission']>(d.request);
      record(d, res.status, res.body, null);
    } catch (err) {
      const e = err as GatewayHttpError;
      record(d, e instanceof GatewayHttpError ? e.status : -1, null, errorText(err));
    }
  };
  const sendBatch = async (batch: OutgoingDocument[]) => {
    let res;
    try {
      res = await client.submitBatch<BatchBody>(batch.map((d) => d.request));
    } catch (err) {
      if (err instanceof GatewayHttpError && err.status >= 400 && err.status < 500 && ![401, 403, 408, 429].includes(err.status)) {
        for (const d of batch) await sendOne(d);
      } else for (const d of batch) record(d, err instanceof GatewayHttpError ? err.status : -1, null, errorText(err));
      onProgress?.(done);
      return;
    }
    const byIndex = new Map((res.body?.results ?? []).map((r) => [r.index, r]));
    batch.forEach((d, i) => {
      const r = byIndex.get(i);
      if (!r) record(d, -1, null, 'the gateway gave no answer for it');
      else record(d, r.status_code, r.submission, r.error ? `${r.status_code} ${r.error.error_code ?? ''} ${r.error.message ?? ''}${detailText(r.error.detail)}`.trim() : null);
    });
    onProgress?.(done);
  };
  const inFlight = new Set<Promise<void>>();
  let batch: OutgoingDocument[] = [];
  let bytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    const p = sendBatch(batch).finally(() => inFlight.delete(p));
    inFlight.add(p);
    batch = [];
    bytes = 0;
    if (inFlight.size >= 2) await Promise.race(inFlight);
  };
  for (const d of docs) {
    const size = Buffer.byteLength(d.request.content.data) + 2048;
    if (batch.length && (batch.length >= BATCH_DOCS || bytes + size > BATCH_BYTES)) await flush();
    batch.push(d);
    bytes += size;
  }
  await flush();
  await Promise.all(inFlight);
  return totals;
}

function errorText(err: unknown): string {
  if (err instanceof GatewayHttpError) return err.status === -1 ? 'gateway unavailable' : `gateway answered ${err.status}${err.body ? `: ${err.body.slice(0, 300)}` : ''}`;
  return (err as Error)?.message ?? String(err);
}

function detailText(detail: unknown): string {
  if (!Array.isArray(detail) || !detail.length) return '';
  const d = detail[0] as { loc?: unknown[]; msg?: string };
  return ` (${(d.loc ?? []).join('.')}: ${d.msg ?? ''})`;
}

/** Sends the run's coverage report and prints its one line; never throws. */
export async function reportCoverage(conn: Pick<Connection, 'target'>, run: RunRecorder, out: Output, error?: string | null): Promise<void> {
  await reportImportRun(conn.target, run, out, error);
}

/** "12 new, 3 updated, 480 unchanged" (the parts that are not zero; "nothing sent" for none). */
export function describeTotals(t: SendTotals): string {
  const parts = [
    t.new ? `${t.new} new` : '',
    t.updated ? `${t.updated} updated (new versions)` : '',
    t.unchanged ? `${t.unchanged} unchanged` : '',
    t.failed ? `${t.failed} refused` : '',
    t.pending ? `${t.pending} not sent (gateway unavailable; sent again next run)` : '',
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'nothing sent';
}

/** A bounded JSON-safe copy of a value read from a file (front matter, export fields): no functions, dates as ISO. */
export function plainValue(v: unknown, depth = 0): unknown {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (typeof v === 'string') return v.replace(/\u0000/g, '').slice(0, 2000);
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v;
  if (depth > 4) return null;
  if (Array.isArray(v)) return v.slice(0, 100).map((x) => plainValue(x, depth + 1));
  if (typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>).slice(0, 100)) o[k.replace(/\u0000/g, '').slice(0, 200)] = plainValue(x, depth + 1);
    return o;
  }
  return null;
}
