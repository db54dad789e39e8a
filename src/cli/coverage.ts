/**
 * `memex coverage`: per source, what the source holds against what memex stored, and why the rest was not
 * (docs/coverage.md). Through the running server when one answers (GET /v1/coverage), else on the database.
 */
import type { Database } from '../db/types.ts';
import type { MissingItemT, SourceCoverageT } from '../schemas/coverage.ts';
import type { ServerClient } from '../client/server.ts';
import { UsageError } from '../util/errors.ts';
import { ago } from './sessions.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const COVERAGE_USAGE = `usage: memex coverage [--source S] [--missing] [--json]
  per source: items in the source, stored, skipped, failed and pending, the last run and the last recount
  --source S   only the sources S names: a collector (email_imap, chatapp, import_mail, ingest, fswatch,
               contacts, email_local, import_notes, import_browser), a source type, a source id, or a part of the path or folder
  --missing    also list every item seen but not stored, with its reason
  --json       the answer as JSON
options: --url URL, --token TOKEN (as every client command)

What each count means per collector: docs/coverage.md.`;

/** Missing items listed per source with --missing; the rest are counted. */
const MISSING_SHOWN = 1000;
const PAGE = 500;

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

interface CoverageStore {
  list(filter: string | undefined): Promise<SourceCoverageT[]>;
  missing(sourceId: string, after: string | null): Promise<{ items: MissingItemT[]; next: string | null; total: number }>;
}

function viaServer(server: ServerClient): CoverageStore {
  return {
    list: async (filter) => (await server.call('coverage', { query: { missing_limit: 0, source: filter || undefined } })).sources,
    missing: async (id, after) =>
      server.call('coverageMissing', { params: { source_id: id }, query: { limit: PAGE, after: after || undefined } }),
  };
}

async function viaDatabase(db: Database): Promise<CoverageStore> {
  const { listCoverage, missingPage } = await import('../coverage/store.ts');
  return {
    list: (filter) => listCoverage(db, { filter, missingLimit: 0 }),
    missing: async (id, after) => (await missingPage(db, id, Number(after ?? 0), PAGE)) ?? { items: [], next: null, total: 0 },
  };
}

/** How a source is named in the table: the folder of an IMAP account with the account, else its path. */
export function sourceLabel(s: Pick<SourceCoverageT, 'collector' | 'source_account_id' | 'source_ref'>): string {
  return s.collector === 'email_imap' && s.source_account_id ? `${s.source_account_id}: ${s.source_ref}` : s.source_ref;
}

const num = (n: number | null) => (n === null ? '-' : String(n));

function lastRun(s: SourceCoverageT, now: number): string {
  if (!s.last_run) return s.reconcile ? 'recounted only' : 'never';
  const status = s.last_run.status === 'completed' ? '' : ` (${s.last_run.status})`;
  return `${ago(s.last_run.finished_at, now)}${status}`;
}

/** The table, aligned like `memex status`: text columns left, counts right. */
export function formatCoverage(sources: SourceCoverageT[], now = Date.now()): string[] {
  if (!sources.length) return ['no coverage recorded yet: collectors and importers record each run (docs/coverage.md)'];
  const head = ['SOURCE', 'COLLECTOR', 'IN SOURCE', 'STORED', 'SKIPPED', 'FAILED', 'PENDING', 'LAST RUN'];
  const rows = sources.map((s) => [sourceLabel(s), s.collector, num(s.in_source), num(s.stored), num(s.skipped), num(s.failed), num(s.pending), lastRun(s, now)]);
  const right = new Set([2, 3, 4, 5, 6]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => `  ${r.map((c, i) => (i === r.length - 1 ? c : right.has(i) ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ')}`.trimEnd();
  const out = [line(head), ...rows.map(line)];
  const notes: string[] = [];
  for (const s of sources) {
    const label = sourceLabel(s);
    const reasons = Object.entries(s.skipped_by_reason ?? {}).filter(([, n]) => n > 0).map(([r, n]) => `${n} ${r.replace('_', ' ')}`);
    if (reasons.length) notes.push(`  ${label}: skipped ${reasons.join(', ')}`);
    if (s.missing_total + s.missing_unlisted > 0) notes.push(`  ${label}: ${s.missing_total + s.missing_unlisted} not stored (memex coverage --missing --source ${s.source_id} lists them)`);
    const r = s.reconcile;
    if (r && !r.in_sync) {
      const parts = [`${r.in_source} in the source now`];
      if (r.drift) parts.push(`${r.drift > 0 ? '+' : ''}${r.drift} since the last run`);
      if (r.added) parts.push(`${r.added} added`);
      if (r.removed) parts.push(`${r.removed} gone`);
      if (r.changed) parts.push(`${r.changed} changed`);
      notes.push(`  ${label}: recount ${ago(r.counted_at, now)}: ${parts.join(', ')}${r.notes.length ? ` — ${r.notes[0]}` : ''}`);
    }
    if (s.last_run?.error) notes.push(`  ${label}: the last run stopped: ${s.last_run.error}`);
    if (s.retry_requested_at) notes.push(`  ${label}: a retry was asked for ${ago(s.retry_requested_at, now)}; the collector has not run since`);
  }
  const plural = sources.length === 1 ? 'source' : 'sources';
  return [`${sources.length} ${plural}:`, ...out, ...(notes.length ? ['', ...notes] : [])];
}

export function formatMissing(s: SourceCoverageT, items: MissingItemT[], total: number): string[] {
  const label = sourceLabel(s);
  if (!items.length && !s.missing_unlisted) return [`${label}: nothing missing`];
  const w = Math.max(...items.map((m) => m.state.length), 5);
  const lines = [`${label}: ${total + s.missing_unlisted} not stored`];
  for (const m of items) lines.push(`  ${m.state.padEnd(w)}  ${m.ref}  (${m.reason_code}: ${m.reason})`);
  const more = total - items.length + s.missing_unlisted;
  if (more > 0) lines.push(`  … ${more} more${s.missing_unlisted ? ` (${s.missing_unlisted} counted by the collector without names)` : ''}`);
  return lines;
}

async function run(store: CoverageStore, args: { source?: string; missing: boolean; json: boolean }, io: Output): Promise<number> {
  const sources = await store.list(args.source);
  const missing = new Map<string, { items: MissingItemT[]; total: number }>();
  if (args.missing) {
    for (const s of sources) {
      const items: MissingItemT[] = [];
      let after: string | null = null;
      let total = 0;
      do {
        const page = await store.missing(s.source_id, after);
        items.push(...page.items);
        total = page.total;
        after = page.next;
      } while (after && items.length < MISSING_SHOWN);
      missing.set(s.source_id, { items: items.slice(0, MISSING_SHOWN), total });
    }
  }
  if (args.json) {
    io.out(JSON.stringify({ sources: sources.map((s) => ({ ...s, missing: missing.get(s.source_id)?.items ?? [] })) }, null, 2));
    return 0;
  }
  if (args.source && !sources.length) {
    io.err(`memex coverage: no source matches "${args.source}" (memex coverage lists them)`);
    return 1;
  }
  for (const line of formatCoverage(sources)) io.out(line);
  if (args.missing) {
    for (const s of sources) {
      const m = missing.get(s.source_id)!;
      io.out('');
      for (const line of formatMissing(s, m.items, m.total)) io.out(line);
    }
  }
  return 0;
}

export const COVERAGE = defineVerb({
  name: 'coverage',
  help: `  coverage [--source S] [--missing]   per source: items in the source against what was stored, and why
                                      the rest was not (docs/coverage.md)`,
  usage: COVERAGE_USAGE,
  server: 'optional',
  options: {
    source: { kind: 'string', description: 'only the sources S names' },
    missing: { kind: 'boolean', description: 'also list every item seen but not stored' },
    json: { kind: 'boolean', description: 'the answer as JSON' },
  },
  async run({ values, out, err, serverOrDatabase }) {
    const source = values.source?.trim() || undefined;
    if (source && source.length > 1000) throw new UsageError('--source is at most 1000 characters');
    const args = { source, missing: values.missing, json: values.json };
    const io: Output = { out: (l) => out.write(`${l}\n`), err: (l) => err.write(`${l}\n`) };
    return serverOrDatabase(
      (server) => run(viaServer(server), args, io),
      async (db) => run(await viaDatabase(db), args, io),
    );
  },
});

export const runCoverageCommand = (argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(COVERAGE, argv, { ...io, openDatabase, env });
