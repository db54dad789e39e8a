/**
 * The rows answers are made of: document rows, chunk texts and people's names, kept in memory and
 * dropped as the change log names them (row-cache.ts), read from the catalog in one statement for
 * whatever is missing; and how a document row becomes a hit.
 */
import type { Database } from '../db/types.ts';
import type { PassageText } from './ask.ts';
import type { IndexChange } from './index-sync.ts';
import { RowCache } from './row-cache.ts';
import { DEFAULT_SNIPPET } from './snippet.ts';
import type { Attachment, SearchHit } from './types.ts';

/** A document as answers show it; `text_head` is the snippet of a document read without a chunk. */
export interface DocRow {
  doc_id: string;
  title: string | null;
  canonical_uri: string | null;
  source_type: string;
  thread_id: string | null;
  content_timestamp: Date | string;
  people: unknown[];
  has_attachments: boolean;
  attachment_count: number;
  metadata: Record<string, unknown>;
  text_head: string;
}

/** Leading characters of a document's text shown when no chunk was matched (thread context). */
const TEXT_HEAD = 400;

/** Scores as answers show them: four decimals. */
export const roundScore = (x: number) => Math.round(x * 10000) / 10000;

function attachmentsOf(metadata: Record<string, unknown>): Attachment[] {
  const list = metadata?.attachments;
  if (!Array.isArray(list)) return [];
  return list
    .filter((a) => a && typeof a === 'object')
    .map((a: Record<string, any>) => ({
      index: typeof a.index === 'number' ? a.index : null,
      kind: typeof a.kind === 'string' ? a.kind : null,
      role: typeof a.role === 'string' ? a.role : null,
      mime_type: typeof a.mime_type === 'string' ? a.mime_type : null,
      filename: typeof a.filename === 'string' ? a.filename : null,
      size_bytes: typeof a.size_bytes === 'number' ? a.size_bytes : null,
    }));
}

/** A hit from a document row, its snippet and what the ranking says of it. */
export function toHit(row: DocRow, snippet: string, extra: Partial<SearchHit>): SearchHit {
  const { attachments: _a, ...metadata } = row.metadata ?? {};
  return {
    document_id: row.doc_id,
    chunk_id: null,
    title: row.title,
    url: row.canonical_uri,
    snippet: snippet.replace(/\s+/g, ' ').trim(),
    score: 0,
    scores: { lexical: null, vector: null, fused: 0 },
    sources: [],
    source_type: row.source_type,
    thread_id: row.thread_id,
    content_timestamp: new Date(row.content_timestamp).toISOString(),
    people: Array.isArray(row.people) ? row.people : [],
    has_attachments: row.has_attachments,
    attachment_count: row.attachment_count,
    attachments: attachmentsOf(row.metadata),
    metadata,
    context: false,
    ...extra,
  };
}

export class SearchRows {
  readonly docRows: RowCache<DocRow>;
  readonly chunkTexts: RowCache<string>;
  readonly personNames: RowCache<string>;

  constructor(
    private readonly db: Database,
    cacheSize: number,
  ) {
    this.docRows = new RowCache<DocRow>(cacheSize);
    this.chunkTexts = new RowCache<string>(cacheSize);
    this.personNames = new RowCache<string>(cacheSize);
  }

  /**
   * Document rows, chunk texts (the first DEFAULT_SNIPPET.maxChars characters) and people's display
   * names, from memory, with one statement for whatever is not there.
   */
  async read(docIds: string[], chunkIds: string[], personIds: string[]) {
    const docs = this.docRows.lookup(docIds);
    const chunks = this.chunkTexts.lookup(chunkIds);
    const names = this.personNames.lookup(personIds);
    const read = { docs: new Map<string, DocRow>(), chunks: new Map<string, string>(), names: new Map<string, string>() };
    try {
      if (docs.missing.length + chunks.missing.length + names.missing.length > 0) {
        const r = await this.db.query<{ docs: DocRow[]; chunks: [string, string][]; names: [string, string][] }>(
          `SELECT
             (SELECT coalesce(json_agg(x), '[]') FROM (
                SELECT d.doc_id, d.title, d.canonical_uri, d.source_type, d.thread_id, d.content_timestamp, d.people,
                       d.has_attachments, d.attachment_count, d.metadata, left(d.text, ${TEXT_HEAD}) AS text_head
                  FROM documents d WHERE d.doc_id = ANY($1::uuid[])) x) AS docs,
             (SELECT coalesce(json_agg(json_build_array(chunk_id, left(text, $3))), '[]')
                FROM chunks WHERE chunk_id = ANY($2::uuid[])) AS chunks,
             (SELECT coalesce(json_agg(json_build_array(person_id, display_name)), '[]')
                FROM people WHERE person_id = ANY($4::uuid[])) AS names`,
          [docs.missing, chunks.missing, DEFAULT_SNIPPET.maxChars, names.missing],
          { name: 'memex_search_rows' },
        );
        const row = r.rows[0];
        for (const d of row.docs) read.docs.set(d.doc_id, d);
        read.chunks = new Map(row.chunks);
        read.names = new Map(row.names);
      }
    } finally {
      this.docRows.fill(docs, read.docs);
      this.chunkTexts.fill(chunks, read.chunks);
      this.personNames.fill(names, read.names);
    }
    for (const [k, v] of read.docs) docs.found.set(k, v);
    for (const [k, v] of read.chunks) chunks.found.set(k, v);
    for (const [k, v] of read.names) names.found.set(k, v);
    return { docs: docs.found, chunks: chunks.found, names: names.found };
  }

  /**
   * Whole chunk texts (ask quotes sentences from anywhere in a chunk, not only its first characters)
   * and where each starts in its document's text, keyed `${document_id}/${chunk_id}`.
   */
  async passageTexts(hits: { document_id: string; chunk_id: string }[]): Promise<Map<string, PassageText>> {
    const r = await this.db.query<{ doc_id: string; chunk_id: string; text: string; start_char: number }>(
      `SELECT DISTINCT ON (cd.doc_id, cd.chunk_id) cd.doc_id::text AS doc_id, cd.chunk_id::text AS chunk_id, c.text, cd.start_char
         FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
        WHERE cd.doc_id = ANY($1::uuid[]) AND cd.chunk_id = ANY($2::uuid[])
        ORDER BY cd.doc_id, cd.chunk_id, cd.ordinal`,
      [hits.map((h) => h.document_id), hits.map((h) => h.chunk_id)],
    );
    return new Map(r.rows.map((x) => [`${x.doc_id}/${x.chunk_id}`, { text: x.text, start: x.start_char }]));
  }

  /** The index's change log named these documents and people (or everything): their rows go. */
  changed(change: IndexChange): void {
    if (change.all) {
      this.docRows.clear();
      this.personNames.clear();
    } else {
      this.docRows.invalidate(change.docIds);
      this.personNames.invalidate(change.personIds);
    }
  }

  /** Drops every row and text (after a forget). */
  clear(): void {
    this.docRows.clear();
    this.chunkTexts.clear();
    this.personNames.clear();
  }
}
