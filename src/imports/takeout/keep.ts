/**
 * Google Keep notes from Takeout (`Keep/*.json`, one per note): title, textContent or listContent (checklists),
 * labels, created/edited times in microseconds, pinned/archived/trashed. Each becomes a `note` document
 * (provider google_keep) with its labels in `metadata.tags`; a trashed note is left out.
 */
import path from 'node:path';
import type { IngestRequestT } from '../../schemas/ingest.ts';
import type { OutgoingDocument } from '../submit.ts';

interface KeepNote {
  title?: string;
  textContent?: string;
  listContent?: Array<{ text?: string; isChecked?: boolean }>;
  labels?: Array<{ name?: string }>;
  isTrashed?: boolean;
  isPinned?: boolean;
  isArchived?: boolean;
  color?: string;
  createdTimestampUsec?: number;
  userEditedTimestampUsec?: number;
  attachments?: Array<{ filePath?: string; mimetype?: string }>;
  annotations?: Array<{ url?: string; title?: string }>;
}

export type KeepResult = { doc: OutgoingDocument } | { skipped: 'excluded' | 'empty'; reason: string } | { failed: string };

const usec = (v: unknown) => (typeof v === 'number' && v > 0 ? new Date(Math.floor(v / 1000)) : null);

export function keepNoteDocument(fileName: string, text: string): KeepResult {
  let n: KeepNote;
  try {
    n = JSON.parse(text);
  } catch (err) {
    return { failed: `not valid JSON (${(err as Error).message})` };
  }
  if (!n || typeof n !== 'object' || (!('textContent' in n) && !('listContent' in n) && !('title' in n))) return { failed: 'not a Keep note (no title, textContent or listContent)' };
  if (n.isTrashed) return { skipped: 'excluded', reason: 'in the Keep trash' };
  const lines: string[] = [];
  if (typeof n.textContent === 'string' && n.textContent.trim()) lines.push(n.textContent.trim());
  if (Array.isArray(n.listContent)) for (const item of n.listContent) if (item?.text) lines.push(`- [${item.isChecked ? 'x' : ' '}] ${item.text}`);
  if (Array.isArray(n.annotations)) for (const a of n.annotations) if (a?.url) lines.push(`${a.title ? `${a.title}: ` : ''}${a.url}`);
  const title = (typeof n.title === 'string' && n.title.trim()) || lines[0]?.split('\n')[0].slice(0, 120) || '';
  if (!lines.length && !title) return { skipped: 'empty', reason: 'the note has no text' };
  const created = usec(n.createdTimestampUsec);
  const edited = usec(n.userEditedTimestampUsec) ?? created ?? new Date(0);
  const tags = (n.labels ?? []).map((l) => l?.name).filter((s): s is string => typeof s === 'string' && s.length > 0);
  const base = path.basename(fileName).replace(/\.json$/i, '');
  const request: IngestRequestT = {
    source_type: 'note',
    source_id: `Google Keep/${base}`.slice(0, 1000),
    source_provider: 'google_keep',
    title: title.slice(0, 500),
    content: { mime_type: 'text/plain', data: lines.join('\n') || title },
    metadata: <Record<string, unknown>>{
      vault: 'Google Keep',
      tags,
      pinned: n.isPinned === true,
      archived: n.isArchived === true,
      ...(n.color && n.color !== 'DEFAULT' ? { color: n.color } : {}),
      ...(n.attachments?.length ? { attachments_left_out: n.attachments.map((a) => a?.filePath ?? '').filter(Boolean).slice(0, 50) } : {}),
    },
    content_timestamp: edited.toISOString(),
    content_timestamp_type: 'modified',
    content_created_at: (created ?? edited).toISOString(),
    content_modified_at: edited.toISOString(),
  };
  return { doc: { ref: path.basename(fileName), request } };
}
