/**
 * `memex sources [list]`, `memex sources pause SOURCE`, `memex sources resume SOURCE` (docs/sources.md): the
 * sources the agents run, how fresh each is, and pausing one. SOURCE is a source_id, or a part of its name
 * ("INBOX", "dana") naming exactly one source. Also the lines `memex status` prints about sources.
 */
import type { ServerClient } from '../client/server.ts';
import type { SourceCoverageT } from '../schemas/coverage.ts';
import { codedError } from '../util/errors.ts';

export class SourcesUsageError extends codedError('USAGE') {
  override name = 'SourcesUsageError';
}

const ago = (iso: string | null, now = Date.now()): string => {
  if (!iso) return 'never';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  const abs = Math.abs(s);
  const text = abs < 90 ? `${abs} s` : abs < 5400 ? `${Math.round(abs / 60)} min` : abs < 129_600 ? `${Math.round(abs / 3600)} h` : `${Math.round(abs / 86_400)} d`;
  return s >= 0 ? `${text} ago` : `in ${text}`;
};

const name = (s: SourceCoverageT) => `${s.collector} ${s.source_account_id ? `${s.source_account_id}/` : ''}${s.source_ref}`;

/** Lines about the sources an agent runs (those with a reported state); none when no agent reports. */
export function formatSources(sources: SourceCoverageT[], now = Date.now()): string[] {
  const run = sources.filter((s) => s.state !== null || s.paused);
  if (!run.length) return [];
  const lines = [`sources (${run.length}):`];
  for (const s of run) {
    const bits = [`${s.state ?? 'paused'}${s.mode ? ` (${s.mode})` : ''}`, `last sync ${ago(s.last_success_at, now)}`];
    if (s.lag_seconds !== null && s.lag_seconds > 0) bits.push(`behind by ${Math.round(s.lag_seconds)} s`);
    if (s.next_run_at) bits.push(`next ${ago(s.next_run_at, now)}`);
    lines.push(`  ${name(s)}: ${bits.filter(Boolean).join(', ')}`);
    if (s.last_error) lines.push(`    last error: ${s.last_error}`);
  }
  return lines;
}

async function list(client: ServerClient): Promise<SourceCoverageT[]> {
  return (await client.call('coverage', { query: { missing_limit: 0 } })).sources;
}

function pick(sources: SourceCoverageT[], what: string): SourceCoverageT {
  const exact = sources.find((s) => s.source_id === what);
  if (exact) return exact;
  const hits = sources.filter((s) => s.state !== null && name(s).toLowerCase().includes(what.toLowerCase()));
  if (hits.length === 1) return hits[0];
  if (!hits.length) throw new SourcesUsageError(`no running source matches "${what}" (memex sources lists them)`);
  throw new SourcesUsageError(`"${what}" matches ${hits.length} sources: ${hits.map((h) => `${name(h)} (${h.source_id})`).join(', ')}; give its source_id`);
}

export async function sourcesCommand(client: ServerClient, args: string[], out: (line: string) => void): Promise<void> {
  const [verb = 'list', what, ...extra] = args;
  if (extra.length) throw new SourcesUsageError('usage: memex sources [list | pause SOURCE | resume SOURCE]');
  const sources = await list(client);
  if (verb === 'list') {
    const lines = formatSources(sources);
    for (const l of lines.length ? lines : ['no source is run by an agent (docs/sources.md: add an IMAP account to the agent configuration)']) out(l);
    return;
  }
  if (verb !== 'pause' && verb !== 'resume') throw new SourcesUsageError(`unknown sources verb "${verb}": list, pause or resume`);
  if (!what) throw new SourcesUsageError(`memex sources ${verb} needs a SOURCE (a source_id or a part of its name)`);
  const s = pick(sources, what);
  const r = await client.call(verb === 'pause' ? 'pauseSource' : 'resumeSource', { params: { source_id: s.source_id } });
  out(`${verb === 'pause' ? 'paused' : 'resumed'}: ${name(s)}. ${r.note}`);
}
