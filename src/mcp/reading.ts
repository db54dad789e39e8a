/**
 * The tools that read one thing whole: get_document (the text with what fits of its metadata, attachments
 * and thread within max_chars) and get_person (identifiers, relationship, recent documents).
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import type { DocumentListItemT } from '../schemas/documents.ts';
import { callOk, ToolError, type MemexApi } from './api.ts';
import { boundedMetadata, cut, describeFeatures, documentUri, LIMITS, peopleNames, short, shortList } from './limits.ts';
import { ok } from './results.ts';
import type { Neighbour, Relationship } from './shapes.ts';

/**
 * get_document: max_chars bounds the whole result, not only the text. Title, URL and people come
 * first, the text takes what is left, then metadata, attachments' text and thread neighbours fill
 * whatever remains; everything else in the result (field names, ids, dates, markers) stays under
 * LIMITS.documentOverhead, for the structured result and the text alike.
 */
export async function getDocument(api: MemexApi, id: string, includeThread: boolean, maxChars: number): Promise<CallToolResult> {
  const doc = await callOk(api, 'getDocument', { params: { doc_id: id } }).catch((err: unknown) => {
    throw err instanceof ToolError && err.answerStatus === 404 ? new ToolError(`no document has id ${id}; use an id returned by search or ask`) : err;
  });
  let budget = maxChars;
  const take = (n: number) => {
    budget = Math.max(0, budget - n);
  };
  const title = short(doc.title ?? null, Math.min(LIMITS.titleChars, budget));
  take(title?.length ?? 0);
  const url = short(doc.canonical_uri ?? null, Math.min(LIMITS.urlChars, budget));
  take(url?.length ?? 0);
  const people: string[] = [];
  for (const name of peopleNames(doc.people)) {
    if (name.length > budget) break;
    people.push(name);
    take(name.length);
  }
  const fullText = String(doc.text ?? '');
  const body = cut(fullText, budget);
  take(Math.min(fullText.length, budget));
  const { attachments: rawAttachments, ...rest } = (doc.metadata ?? {}) as Record<string, unknown>;
  const metadata = boundedMetadata(rest, Math.min(LIMITS.metadataChars, budget));
  take(JSON.stringify(metadata).length);
  const attachments: { filename: string | null; mime_type: string | null; kind: string | null; text: string }[] = [];
  // Stored metadata.attachments entries: checked field by field, anything may be missing or of another type.
  type RawAttachment = { filename?: unknown; mime_type?: unknown; kind?: unknown; caption?: unknown; ocr?: { text?: unknown } | null } | null;
  for (const x of (Array.isArray(rawAttachments) ? rawAttachments : []).slice(0, 20) as RawAttachment[]) {
    if (budget <= 0) break;
    const entry = {
      filename: short(typeof x?.filename === 'string' ? x.filename : null, Math.min(LIMITS.nameChars, budget)),
      mime_type: short(typeof x?.mime_type === 'string' ? x.mime_type : null, 100),
      kind: short(typeof x?.kind === 'string' ? x.kind : null, 20),
      text: '',
    };
    take(entry.filename?.length ?? 0);
    const text = [x?.ocr?.text, x?.caption].filter((t) => typeof t === 'string' && t).join('\n');
    entry.text = cut(text, Math.min(LIMITS.attachmentChars, budget)).text;
    take(Math.min(text.length, LIMITS.attachmentChars));
    attachments.push(entry);
  }
  let thread: { thread_id: string; documents_in_thread: number; neighbours: z.infer<typeof Neighbour>[] } | null = null;
  if (includeThread && doc.thread_id) {
    thread = await threadNeighbours(api, doc.thread_id, id);
    const kept: z.infer<typeof Neighbour>[] = [];
    for (const n of thread.neighbours) {
      const size = (n.title?.length ?? 0) + n.snippet.length;
      if (size > budget) break;
      kept.push(n);
      take(size);
    }
    thread.neighbours = kept;
  }
  const out = {
    document_id: doc.doc_id,
    title,
    source_type: doc.source_type,
    date: doc.content_timestamp,
    url,
    people,
    is_active_version: Boolean(doc.is_active_version),
    text: body.text,
    text_chars: fullText.length,
    truncated: body.truncated,
    metadata,
    attachments,
    thread,
    resource_uri: documentUri(doc.doc_id),
  };
  const lines = [
    `${out.title ?? '(untitled)'} [${out.source_type}, ${out.date}]${out.people.length ? ` — ${out.people.join(', ')}` : ''}`,
    out.is_active_version ? '' : '(an older version of this document)',
    out.text,
    ...attachments.filter((x) => x.text).map((x) => `\n[attachment ${x.filename ?? ''}]\n${x.text}`),
    thread && thread.neighbours.length
      ? `\nThread (${thread.documents_in_thread} documents), neighbours:\n${thread.neighbours.map((n) => `- ${n.position}: ${n.date.slice(0, 16)} ${n.title ?? ''} ${n.snippet.slice(0, 120)} (id ${n.document_id})`).join('\n')}`
      : '',
  ].filter(Boolean);
  return ok(out, lines.join('\n'));
}

/** Up to LIMITS.threadNeighbours documents before and after `id` in its thread (newest-first pages). */
async function threadNeighbours(api: MemexApi, threadId: string, id: string) {
  const page = 200;
  const seen: DocumentListItemT[] = [];
  let total = 0;
  let at = -1;
  for (let offset = 0; offset < LIMITS.threadScan; offset += page) {
    const r = await callOk(api, 'listDocuments', { query: { thread_id: threadId, limit: page, offset } });
    total = r.total;
    seen.push(...r.documents);
    at = seen.findIndex((d) => d.doc_id === id);
    // Stop once the document and its older neighbours are in hand, or the thread is exhausted.
    if ((at >= 0 && seen.length - at > LIMITS.threadNeighbours) || r.documents.length < page) break;
  }
  const summary = (d: DocumentListItemT, position: 'before' | 'after') => ({
    document_id: d.doc_id,
    title: short(d.title ?? null),
    date: d.content_timestamp,
    snippet: cut(String(d.text ?? '').replace(/\s+/g, ' '), 200).text,
    position,
  });
  if (at < 0) return { thread_id: threadId, documents_in_thread: total, neighbours: [] };
  // The list is newest first: later documents come before `at`, earlier ones after it.
  const after = seen.slice(Math.max(0, at - LIMITS.threadNeighbours), at).reverse().map((d) => summary(d, 'after'));
  const before = seen.slice(at + 1, at + 1 + LIMITS.threadNeighbours).map((d) => summary(d, 'before'));
  return { thread_id: threadId, documents_in_thread: total, neighbours: [...before.reverse(), ...after] };
}

export async function getPerson(api: MemexApi, personId: string, recent: number): Promise<CallToolResult> {
  const p = await callOk(api, 'getPerson', { params: { person_id: personId } }).catch((err: unknown) => {
    throw err instanceof ToolError && err.answerStatus === 404 ? new ToolError(`no person has id ${personId}; find ids with search_people`) : err;
  });
  let relationship: z.infer<typeof Relationship> | null = null;
  let note: string | null = null;
  const rel = await callOk(api, 'topRelationships', { query: { window: '3650d', person_id: p.person_id, limit: 1 } }).catch((err: unknown) => {
    if (!(err instanceof ToolError) || err.answerStatus === undefined) throw err;
    return err;
  });
  if (!(rel instanceof ToolError) && rel.relationships.length) {
    const e = rel.relationships[0];
    relationship = { score: Number(e.score), last_contact_at: e.last_contact_at ?? null, features: e.features ?? {}, summary: describeFeatures(e.features ?? {}) };
  } else if (!(rel instanceof ToolError)) note = 'no relationship edge: this person has no two-way contact with the self person in ten years (newsletters and no-reply senders get none)';
  else if (rel.answerStatus === 404) note = typeof rel.body?.detail === 'string' ? rel.body.detail : 'the self person is unknown';
  else note = `relationship unavailable (${rel.answerStatus})`;
  const docs = await callOk(api, 'listDocuments', { query: { person_id: p.person_id, limit: recent } });
  const out = {
    person_id: p.person_id,
    display_name: short(p.display_name, LIMITS.nameChars),
    given_name: short(p.given_name ?? null, LIMITS.nameChars),
    family_name: short(p.family_name ?? null, LIMITS.nameChars),
    organization: short(p.organization ?? null, LIMITS.nameChars),
    nicknames: shortList(p.nicknames),
    identifiers: p.identifiers.slice(0, 50).map((i) => ({ kind: i.kind, value: short(String(i.value_raw), LIMITS.nameChars), label: short(i.label ?? null, LIMITS.nameChars) })),
    merged_from: (p.merged_from ?? []).slice(0, 50),
    relationship,
    relationship_note: note,
    recent_documents: docs.documents.map((d) => ({
      document_id: d.doc_id,
      title: short(d.title ?? null),
      source_type: d.source_type,
      date: d.content_timestamp,
    })),
    documents_total: docs.total,
  };
  const text = [
    `${out.display_name}${out.organization ? ` (${out.organization})` : ''} — id ${out.person_id}`,
    out.identifiers.length ? `Identifiers: ${out.identifiers.map((i) => `${i.kind} ${i.value}`).join(', ')}` : '',
    relationship ? `Relationship score ${relationship.score.toFixed(1)}: ${relationship.summary}` : `Relationship: ${note}`,
    out.recent_documents.length
      ? `Recent documents (${out.documents_total} in all):\n${out.recent_documents.map((d) => `- ${d.date.slice(0, 10)} ${d.title ?? '(untitled)'} [${d.source_type}] id ${d.document_id}`).join('\n')}`
      : 'No documents with this person.',
  ].filter(Boolean);
  return ok(out, text.join('\n'));
}
