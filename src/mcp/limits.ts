/**
 * What the MCP tools' results may hold (every list capped, long texts cut with a marker) and the helpers
 * that hold them to it; the tool descriptions state the same numbers.
 */

export const LIMITS = {
  snippetChars: 400,
  documentChars: 20_000,
  maxDocumentChars: 200_000,
  attachmentChars: 4_000,
  threadNeighbours: 5,
  threadScan: 1_000,
  highlightChars: 500,
  noteChars: 100_000,
  metadataChars: 8_000,
  /** Titles, names and URLs in any result (stored titles are at most 1,000 characters). */
  titleChars: 300,
  urlChars: 2_000,
  nameChars: 200,
  /** Identifiers (emails, phones, nicknames) listed per person. */
  listItems: 20,
  /** memex://document/{id}: the text read through the resource (get_document reads up to maxDocumentChars). */
  resourceChars: 20_000,
  /** get_document: what the result may hold beyond max_chars (field names, ids, dates, markers). */
  documentOverhead: 2_000,
} as const;

export const documentUri = (id: string) => `memex://document/${id}`;

/** A title, name or URL at most `max` characters, cut with "…". */
export function short<T extends string | null | undefined>(s: T, max: number = LIMITS.titleChars): T {
  if (typeof s !== 'string' || s.length <= max) return s;
  return (max <= 0 ? '' : `${s.slice(0, max - 1)}…`) as T;
}

/** A list of short strings: at most LIMITS.listItems, each at most LIMITS.nameChars. */
export function shortList(xs: unknown): string[] {
  return (Array.isArray(xs) ? xs : []).slice(0, LIMITS.listItems).map((x) => short(String(x), LIMITS.nameChars));
}

export function cut(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  return { text: `${text.slice(0, max)}\n[… truncated: ${text.length - max} more characters]`, truncated: true };
}

/** Names of the people of a document or hit (display name, else the identifier). */
export function peopleNames(people: unknown): string[] {
  if (!Array.isArray(people)) return [];
  const out: string[] = [];
  for (const p of people) {
    if (typeof p === 'string') out.push(p);
    else if (p && typeof p === 'object') {
      const o = p as Record<string, unknown>;
      const name = (typeof o.display_name === 'string' && o.display_name.trim()) || o.identifier || o.name;
      if (typeof name === 'string' && name) out.push(name);
    }
  }
  return [...new Set(out)].slice(0, LIMITS.listItems).map((n) => short(n, LIMITS.nameChars));
}

/** Metadata as stored, or when its JSON is longer than the cap, its scalar fields (strings cut) and a marker. */
export function boundedMetadata(metadata: Record<string, unknown>, max: number = LIMITS.metadataChars): Record<string, unknown> {
  if (JSON.stringify(metadata).length <= max) return metadata;
  const out: Record<string, unknown> = {};
  let used = 0;
  for (const [k, v] of Object.entries(metadata)) {
    let value: unknown;
    if (typeof v === 'string') value = v.length > 200 ? `${v.slice(0, 200)}…` : v;
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) value = v;
    else continue;
    const size = JSON.stringify(k).length + JSON.stringify(value).length + 2;
    if (used + size > max) break;
    out[k] = value;
    used += size;
  }
  out._truncated = `metadata over ${max} characters: nested and further fields left out`;
  return out;
}

/** Feature words of a relationship edge (edge_features of spec 2.6). */
export function describeFeatures(f: Record<string, any>): string {
  const parts: string[] = [];
  const days = Number(f.days_since_last_message);
  if (Number.isFinite(days)) parts.push(days < 1 ? 'last message today' : `last message ${Math.round(days)} day${Math.round(days) === 1 ? '' : 's'} ago`);
  if (typeof f.messages_30d === 'number') parts.push(`${f.messages_30d} message${f.messages_30d === 1 ? '' : 's'} in the last 30 days`);
  if (typeof f.distinct_threads_90d === 'number') parts.push(`${f.distinct_threads_90d} conversation${f.distinct_threads_90d === 1 ? '' : 's'} in 90 days`);
  if (typeof f.attachments_30d === 'number' && f.attachments_30d > 0) parts.push(`${f.attachments_30d} attachment${f.attachments_30d === 1 ? '' : 's'} in 30 days`);
  if (typeof f.avg_reply_latency_seconds === 'number') {
    const h = f.avg_reply_latency_seconds / 3600;
    parts.push(`replies after ${h < 1 ? `${Math.max(1, Math.round(h * 60))} min` : `${h.toFixed(h < 10 ? 1 : 0)} h`} on average`);
  }
  return parts.join('; ');
}
