/**
 * What `memex status` and `memex reindex --failed --wait` print, the same whether they asked the running
 * server or read the database (src/client/server.ts, serverOrDatabase, decides which).
 */
import type { StatusResponseT } from '../schemas/status.ts';
import type { ServerClient } from '../client/server.ts';

const rate = (x: number) => x.toFixed(1);

/** `memex status` lines, the same whichever way the report was read. */
function recentShare(period: string, s: StatusResponseT['meaning_searchable']['last_30_days']): string {
  if (s.share === null) return `${period}: no documents`;
  return `${period}: ${Math.floor(100 * s.share)} % (${s.searchable} of ${s.documents} documents)`;
}

export function formatStatus(s: StatusResponseT): string[] {
  const c = s.chunks;
  const bySource = new Map<string, string[]>();
  for (const r of s.documents.by_source) {
    const list = bySource.get(r.source_type) ?? [];
    list.push(`${r.count} ${r.status}`);
    bySource.set(r.source_type, list);
  }
  // Source names are as long as their collectors make them (email_attachment, chatapp_attachment): the column is as
  // wide as the longest, so every row's counts start in the same place.
  const sourceWidth = Math.max(10, ...[...bySource.keys()].map((k) => k.length + 2));
  const lines = [
    `documents   ${s.documents.total} total`,
    ...[...bySource].map(([source, parts]) => `  ${source.padEnd(sourceWidth)}${parts.join(', ')}`),
    `chunks      ${c.total} total: ${c.embedded} embedded, ${c.pending} pending, ${c.processing} processing, ${c.failed} failed`,
    `queue       ${s.queue.waiting} waiting, oldest ${Math.round(s.queue.age_seconds)} s (expired leases: ${s.queue.expired_leases})` +
      (s.queue.eta_seconds === null ? '' : `, eta ${s.queue.eta_seconds} s`),
    `throughput  ${rate(s.throughput.chunks_embedded.last_minute)} chunks/s embedded (last minute), ` +
      `${rate(s.throughput.chunks_embedded.last_15_minutes)} (last 15 min); ` +
      `${rate(s.throughput.documents_ingested.last_minute)} documents/s ingested (last minute)`,
    ...s.models.map((m) => `model       ${m.model} (${m.dimensions ?? '?'} dims, ${m.state}): ${m.vectors} vectors`),
    `meaning     ${recentShare('last 30 days', s.meaning_searchable.last_30_days)}; ${recentShare('last 365 days', s.meaning_searchable.last_365_days)} ` +
      '(searchable by meaning; embedded newest first)',
  ];
  if (s.worker) {
    lines.push(
      `worker      ${s.worker.running ? 'running' : 'stopped'} since ${s.worker.started_at}: ${s.worker.embedded} embedded, ` +
        `${s.worker.skipped} without meaning worth a vector, ${s.worker.failed} failed${s.worker.last_error ? `; last error: ${s.worker.last_error}` : ''}`,
    );
  }
  // An older server's report has no stored_redaction.
  if ((s.stored_redaction?.documents ?? 0) > 0) {
    const where = s.stored_redaction.by_source.map((r) => `${r.count} ${r.source_type}`).join(', ');
    lines.push(
      `redacted    ${s.stored_redaction.documents} document(s) stored with addresses/numbers replaced by markers (${where}); ` +
        'memex import mail PATH of the same mail replaces each with its original (docs/email-collectors.md)',
    );
  }
  for (const f of s.failures.chunks) lines.push(`failed      ${f.count} chunk(s): ${f.reason}`);
  for (const f of s.failures.documents) lines.push(`failed      ${f.count} ${f.source_type} document(s): ${f.reason}`);
  return lines;
}

/** GET /v1/status. */
export function statusOverHttp(client: ServerClient): Promise<StatusResponseT> {
  return client.call('status', {});
}

/** Follows the server's queue until nothing is pending or processing (reindex --wait). */
export async function watchQueueOverHttp(client: ServerClient, opts: { intervalMs?: number } = {}): Promise<void> {
  const { watchQueue } = await import('../embedding/progress.ts');
  await watchQueue(async () => (await statusOverHttp(client)).chunks, opts);
}
