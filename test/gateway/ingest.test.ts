import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe(`v1 ingestion on ${backend}`, () => {
  it('stores a document and returns every field on fetch', async () => {
    const body = noteBody({
      source_provider: 'notes-app',
      source_account_id: 'acct-1',
      canonical_uri: 'https://notes.example/n/1',
      content_timestamp_type: 'modified',
      content_created_at: '2026-02-27T08:00:00Z',
      people: [
        { identifier: '(508) 410-9572', identifier_type: 'phone', role: 'sender', display_name: 'Ann Lee' },
        { identifier: 'Bob@Example.COM', identifier_type: 'email', role: 'recipient' },
      ],
      thread: { external_id: 'thread-42', source_type: 'email', title: 'Lisbon trip', is_group: false },
      has_due_date: true,
      due_date: '2026-03-12',
      relevance_score: 0.75,
    });
    const res = await gw.request('POST', '/v1/ingest', body);
    expect(res.statusCode).toBe(202);
    const sub = res.json();
    expect(sub).toMatchObject({ external_id: body.source_id, version_number: 1, duplicate: false, total_chunks: 1 });
    expect(sub.file_ids).toEqual([]);
    expect(sub.thread_id).toMatch(/^[0-9a-f-]{36}$/);

    const doc = (await gw.request('GET', `/v1/doc/${sub.doc_id}`)).json();
    expect(doc).toMatchObject({
      doc_id: sub.doc_id,
      external_id: body.source_id,
      source_type: 'note',
      source_provider: 'notes-app',
      source_account_id: 'acct-1',
      version_number: 1,
      previous_version_id: null,
      is_active_version: true,
      title: 'Trip planning',
      text: body.content.data,
      mime_type: 'text/plain',
      canonical_uri: 'https://notes.example/n/1',
      // Converted to UTC from +02:00.
      content_timestamp: '2026-03-01T08:15:00.000Z',
      content_timestamp_type: 'modified',
      content_created_at: '2026-02-27T08:00:00.000Z',
      thread_id: sub.thread_id,
      has_attachments: false,
      attachment_count: 0,
      has_due_date: true,
      due_date: '2026-03-12T00:00:00.000Z',
      relevance_score: 0.75,
      intent_status: 'pending',
      extraction_failed: false,
      enrichment_failed: false,
    });
    expect(['enriched', 'indexed']).toContain(doc.status);
    expect(doc.text_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(doc.metadata.folder).toBe('travel');
    expect(doc.metadata.timestamps.primary).toEqual({ value: '2026-03-01T08:15:00.000Z', type: 'modified' });
    expect(doc.people).toHaveLength(2);
    expect(Date.parse(doc.ingested_at)).not.toBeNaN();

    // People were canonicalised and linked with their roles.
    const links = await gw.db.query<{ role: string; kind: string; value_canonical: string; display_name: string }>(
      `SELECT dp.role, pi.kind, pi.value_canonical, p.display_name FROM document_people dp
         JOIN people p ON p.person_id = dp.person_id JOIN person_identifiers pi ON pi.person_id = p.person_id
        WHERE dp.doc_id = $1 ORDER BY dp.role DESC`,
      [sub.doc_id],
    );
    expect(links.rows).toEqual([
      { role: 'sender', kind: 'phone', value_canonical: '+15084109572', display_name: 'Ann Lee' },
      { role: 'recipient', kind: 'email', value_canonical: 'bob@example.com', display_name: 'Bob@Example.COM' },
    ]);
    const thread = await gw.db.query('SELECT source_type, title, external_id FROM threads WHERE thread_id = $1', [sub.thread_id]);
    expect(thread.rows[0]).toEqual({ source_type: 'email', title: 'Lisbon trip', external_id: 'thread-42' });
  });

  it('answers a repeated ingest with duplicate: true and creates nothing', async () => {
    const body = noteBody();
    const first = await gw.request('POST', '/v1/ingest', body);
    expect(first.statusCode).toBe(202);
    const count = async () =>
      (await gw.db.query<{ d: number; s: number; c: number }>(
        `SELECT (SELECT count(*)::int FROM documents) AS d, (SELECT count(*)::int FROM ingest_submissions) AS s,
                (SELECT count(*)::int FROM chunks) AS c`,
      )).rows[0];
    const before = await count();
    const again = await gw.request('POST', '/v1/ingest', body);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({
      duplicate: true,
      doc_id: first.json().doc_id,
      submission_id: first.json().submission_id,
      version_number: 1,
    });
    expect(await count()).toEqual(before);
  });

  it('makes a new version when the text of the same source document changes', async () => {
    const body = noteBody();
    const v1 = (await gw.request('POST', '/v1/ingest', body)).json();
    const changed = { ...body, content: { data: 'Book the NIGHT train to Lisbon instead.' } };
    const res = await gw.request('POST', '/v1/ingest', changed);
    expect(res.statusCode).toBe(202);
    const v2 = res.json();
    expect(v2.version_number).toBe(2);
    expect(v2.doc_id).not.toBe(v1.doc_id);

    const old = (await gw.request('GET', `/v1/doc/${v1.doc_id}`)).json();
    expect(old).toMatchObject({ is_active_version: false, superseded_by_id: v2.doc_id });
    expect(old.superseded_at).not.toBeNull();
    const cur = (await gw.request('GET', `/v1/doc/${v2.doc_id}`)).json();
    expect(cur).toMatchObject({ is_active_version: true, previous_version_id: v1.doc_id, text: changed.content.data });

    // Lists return only the active version; the old one lost its chunk links.
    const list = (await gw.request('GET', '/v1/documents?source_type=note&limit=200')).json();
    const ids = list.documents.map((d: any) => d.doc_id);
    expect(ids).toContain(v2.doc_id);
    expect(ids).not.toContain(v1.doc_id);
    const links = await gw.db.query('SELECT 1 FROM chunk_documents WHERE doc_id = $1', [v1.doc_id]);
    expect(links.rows).toHaveLength(0);
  });

  it('treats changed metadata as an edit too, and the same content again as a duplicate', async () => {
    const body = noteBody();
    const v1 = (await gw.request('POST', '/v1/ingest', body)).json();
    const v2 = (await gw.request('POST', '/v1/ingest', { ...body, metadata: { folder: 'archive' } })).json();
    expect(v2.version_number).toBe(2);
    const again = await gw.request('POST', '/v1/ingest', { ...body, metadata: { folder: 'archive' } });
    expect(again.json()).toMatchObject({ duplicate: true, doc_id: v2.doc_id });
    expect(v1.doc_id).not.toBe(v2.doc_id);
  });

  it('decodes base64 content', async () => {
    const text = 'Grüße aus München — base64 encoded note';
    const res = await gw.request('POST', '/v1/ingest', noteBody({
      content: { data: Buffer.from(text).toString('base64'), encoding: 'base64' },
    }));
    expect(res.statusCode).toBe(202);
    const doc = (await gw.request('GET', `/v1/doc/${res.json().doc_id}`)).json();
    expect(doc.text).toBe(text);
  });

  it('shares chunks of identical text between documents', async () => {
    const data = 'Shared paragraph that two different notes contain word for word.';
    const a = (await gw.request('POST', '/v1/ingest', noteBody({ content: { data } }))).json();
    const b = (await gw.request('POST', '/v1/ingest', noteBody({ content: { data } }))).json();
    const r = await gw.db.query<{ chunk_id: string }>(
      'SELECT chunk_id FROM chunk_documents WHERE doc_id = ANY($1::uuid[])',
      [[a.doc_id, b.doc_id]],
    );
    expect(r.rows).toHaveLength(2);
    expect(r.rows[0].chunk_id).toBe(r.rows[1].chunk_id);
  });

  it('chunks long text into overlapping chunks with offsets', async () => {
    const para = 'Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor. ';
    const res = (await gw.request('POST', '/v1/ingest', noteBody({ content: { data: para.repeat(60) } }))).json();
    expect(res.total_chunks).toBeGreaterThan(3);
    const status = (await gw.request('GET', `/v1/ingest/${res.submission_id}`)).json();
    expect(status.total_chunks).toBe(res.total_chunks);
    const spans = await gw.db.query<{ start_char: number; end_char: number }>(
      'SELECT start_char, end_char FROM chunk_documents WHERE doc_id = $1 ORDER BY ordinal',
      [res.doc_id],
    );
    for (let i = 1; i < spans.rows.length; i++) {
      expect(spans.rows[i].start_char).toBeLessThan(spans.rows[i - 1].end_char); // overlap
      expect(spans.rows[i].end_char - spans.rows[i].start_char).toBeLessThanOrEqual(1200);
    }
  });
});

describe(`batch ingestion on ${backend}`, () => {
  it('ingests good items, reports bad ones per item, and a retry creates nothing new', async () => {
    const docs = [
      noteBody({ source_id: 'batch-a' }),
      noteBody({ source_id: 'batch-b', content: { data: '   ' } }),
      noteBody({ source_id: 'batch-c', content: { data: 'bm90IHZhbGlk!!', encoding: 'base64' } }),
      noteBody({ source_id: 'batch-d', content_timestamp_type: 'whenever' }),
      noteBody({ source_id: 'batch-e' }),
    ];
    const res = await gw.request('POST', '/v1/ingest:batch', { documents: docs });
    expect(res.statusCode).toBe(207);
    const body = res.json();
    expect(body).toMatchObject({ batch_status: 'partial', total_count: 5, success_count: 2, failure_count: 3 });
    expect(body.results.map((r: any) => r.status_code)).toEqual([202, 422, 422, 422, 202]);
    expect(body.results[1].error).toMatchObject({ error_code: 'INGEST.EMPTY_TEXT', retryable: false });
    expect(body.results[2].error.error_code).toBe('INGEST.INVALID_BASE64');
    expect(body.results[0].submission.doc_id).toMatch(/^[0-9a-f-]{36}$/);

    const stored = await gw.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'batch-%'",
    );
    expect(stored.rows[0].n).toBe(2);

    // The batch record is visible with its counts, and per-document progress by batch id.
    const status = (await gw.request('GET', `/v1/ingest/${body.batch_id}`)).json();
    expect(status.batch).toMatchObject({ status: 'partial', total_count: 5, success_count: 2, failure_count: 3 });
    expect(status.batch.submissions).toHaveLength(2);
    expect(status.total_chunks).toBe(2);

    const retry = await gw.request('POST', '/v1/ingest:batch', { documents: docs });
    const rb = retry.json();
    expect(rb.batch_id).toBe(body.batch_id);
    expect(rb.results[0]).toMatchObject({ status_code: 200, submission: { duplicate: true } });
    expect(rb.results[4].submission.doc_id).toBe(body.results[4].submission.doc_id);
    const after = await gw.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'batch-%'",
    );
    expect(after.rows[0].n).toBe(2);
    const batches = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ingest_batches WHERE batch_id = $1', [
      body.batch_id,
    ]);
    expect(batches.rows[0].n).toBe(1);
  });

  it('isolates an item the database rejects: the rest of its group is still stored', async () => {
    const base = (id: string, extra: Record<string, unknown> = {}) => ({
      idempotency_key: `catalog-key-${id}`,
      source_type: 'note',
      source_id: id,
      content_sha256: 'x',
      text: `Catalog level document ${id}`,
      content_timestamp: '2026-01-01T00:00:00Z',
      content_timestamp_type: 'created',
      ...extra,
    });
    const docs = [base('cat-1'), base('cat-2', { facet_overrides: { attachment_count: -1 } }), base('cat-3')];
    const res = await gw.request('POST', '/v1/catalog/documents/batch', { documents: docs });
    expect(res.statusCode).toBe(207);
    const body = res.json();
    expect(body).toMatchObject({ batch_status: 'partial', success_count: 2, failure_count: 1 });
    expect(body.items.map((i: any) => i.ok)).toEqual([true, false, true]);
    expect(body.items[1].error).toMatchObject({ status: 422, code: 'INGEST.CONSTRAINT_VIOLATION' });
    const stored = await gw.db.query<{ external_id: string }>(
      "SELECT external_id FROM documents WHERE external_id LIKE 'cat-%' ORDER BY external_id",
    );
    expect(stored.rows.map((r) => r.external_id)).toEqual(['cat-1', 'cat-3']);
  });

  it('stores two edits of one document in one batch as successive versions', async () => {
    const first = noteBody({ source_id: 'edited-twice', content: { data: 'First draft of the plan.' } });
    const second = { ...first, content: { data: 'Second draft of the plan.' } };
    const res = await gw.request('POST', '/v1/ingest:batch', { documents: [first, second] });
    expect(res.statusCode).toBe(202);
    const [a, b] = res.json().results.map((r: any) => r.submission);
    expect([a.version_number, b.version_number]).toEqual([1, 2]);
    const active = await gw.db.query<{ text: string }>(
      "SELECT text FROM documents WHERE external_id = 'edited-twice' AND is_active_version",
    );
    expect(active.rows).toEqual([{ text: 'Second draft of the plan.' }]);
  });

  it('uses the single-document flow for a batch of one', async () => {
    const res = await gw.request('POST', '/v1/ingest:batch', { documents: [noteBody()] });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ batch_id: null, batch_status: 'completed', total_count: 1, success_count: 1 });
  });

  it('validates items one by one: an unknown source_type or a missing content fails alone, the rest is stored', async () => {
    const docs = [
      noteBody({ source_id: 'per-item-a' }),
      noteBody({ source_id: 'per-item-b', source_type: 'spaceship' }),
      { source_type: 'note', source_id: 'per-item-c' },
      noteBody({ source_id: 'per-item-d' }),
    ];
    const res = await gw.request('POST', '/v1/ingest:batch', { documents: docs });
    expect(res.statusCode).toBe(207);
    const body = res.json();
    expect(body).toMatchObject({ total_count: 4, success_count: 2, failure_count: 2 });
    expect(body.results.map((r: any) => r.status_code)).toEqual([202, 422, 422, 202]);
    expect(body.results[1].error.details.detail).toEqual([
      { loc: ['body', 'documents', 1, 'source_type'], msg: expect.stringContaining('one of'), type: 'enum' },
    ]);
    expect(body.results[2].error.details.detail).toEqual([
      { loc: ['body', 'documents', 2, 'content'], msg: 'Field required', type: 'missing' },
    ]);
    const stored = await gw.db.query<{ external_id: string }>(
      "SELECT external_id FROM documents WHERE external_id LIKE 'per-item-%' ORDER BY external_id",
    );
    expect(stored.rows.map((r) => r.external_id)).toEqual(['per-item-a', 'per-item-d']);

    // A batch of one bad item is reported in the batch shape too; only a body that is not a batch is a 422.
    const one = await gw.request('POST', '/v1/ingest:batch', { documents: [{ source_type: 'note' }] });
    expect(one.statusCode).toBe(207);
    expect(one.json().results[0].error.details.detail[0].loc).toEqual(['body', 'documents', 0, 'source_id']);
    for (const notBatch of [{}, { documents: 'x' }, { documents: ['x'] }, [noteBody()]]) {
      const r = await gw.request('POST', '/v1/ingest:batch', notBatch);
      expect(r.statusCode, JSON.stringify(notBatch)).toBe(422);
      expect(r.json().detail[0].loc[0]).toBe('body');
    }
  });

  it('validates metadata.attachments entries (spec 2.1) with a 422 that names the entry', async () => {
    const bad: [unknown, (string | number)[]][] = [
      [[{ filename: 'a.bin' }], ['body', 'metadata', 'attachments', 0, 'index']],
      [[{ index: 0, mime_type: 'image/png' }, { index: 1, mime_type: 'x/y', kind: 'spaceship' }], ['body', 'metadata', 'attachments', 1, 'kind']],
      [[{ index: 0, mime_type: 'image/png', role: 'cover' }], ['body', 'metadata', 'attachments', 0, 'role']],
      [[{ index: 0, mime_type: 'image/png', size_bytes: 1.5 }], ['body', 'metadata', 'attachments', 0, 'size_bytes']],
      [[{ index: 0 }], ['body', 'metadata', 'attachments', 0, 'mime_type']],
      ['not a list', ['body', 'metadata', 'attachments']],
    ];
    for (const [attachments, loc] of bad) {
      const res = await gw.request('POST', '/v1/ingest', noteBody({ metadata: { attachments } }));
      expect(res.statusCode, JSON.stringify(attachments)).toBe(422);
      expect(res.json().detail[0].loc).toEqual(loc);
      expect(res.json().detail[0].msg).toMatch(/^(Field required|Input )/);
    }
    const ok = await gw.request('POST', '/v1/ingest', noteBody({
      metadata: { attachments: [{ index: 0, kind: 'image', role: 'inline', mime_type: 'image/png', size_bytes: 10, filename: 'a.png', source_ref: { path: 'x/a.png' } }] },
    }));
    expect(ok.statusCode, ok.body).toBe(202);
    // In a batch the bad entry fails its item only.
    const batch = await gw.request('POST', '/v1/ingest:batch', {
      documents: [noteBody({ metadata: { attachments: [{ filename: 'a.bin' }] } }), noteBody()],
    });
    expect(batch.json().results.map((r: any) => r.status_code)).toEqual([422, 202]);
    expect(batch.json().results[0].error.details.detail[0].loc).toEqual(['body', 'documents', 0, 'metadata', 'attachments', 0, 'index']);
  });

  it('rejects an empty batch with 422', async () => {
    const res = await gw.request('POST', '/v1/ingest:batch', { documents: [] });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'documents'], type: 'too_short' });
  });
});

describe(`status, documents and updates on ${backend}`, () => {
  it('reports status by submission id with chunk counts that match the database', async () => {
    const sub = (await gw.request('POST', '/v1/ingest', noteBody())).json();
    const st = (await gw.request('GET', `/v1/ingest/${sub.submission_id}`)).json();
    expect(st).toMatchObject({ submission_id: sub.submission_id, doc_id: sub.doc_id, total_chunks: 1, error: null });
    const db = await gw.db.query<{ embedded: number; pending: number }>(
      `SELECT count(*) FILTER (WHERE c.embedding_status = 'embedded')::int AS embedded,
              count(*) FILTER (WHERE c.embedding_status IN ('pending','processing'))::int AS pending
         FROM chunk_documents cd JOIN chunks c USING (chunk_id) WHERE cd.doc_id = $1`,
      [sub.doc_id],
    );
    expect(st.embedded_chunks).toBe(db.rows[0].embedded);
    expect(st.pending_chunks).toBe(db.rows[0].pending);
    expect((await gw.request('GET', '/v1/ingest/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
  });

  it('lists documents with filters and bounded paging', async () => {
    await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'reminder', source_id: 'rem-1' }));
    await gw.request('POST', '/v1/ingest', noteBody({
      source_type: 'reminder', source_id: 'rem-2', metadata: { attachments: [{ index: 0, mime_type: 'image/png' }] },
    }));
    const all = (await gw.request('GET', '/v1/documents?source_type=reminder')).json();
    expect(all.total).toBe(2);
    const withAtt = (await gw.request('GET', '/v1/documents?source_type=reminder&has_attachments=true')).json();
    expect(withAtt.documents.map((d: any) => d.external_id)).toEqual(['rem-2']);
    const page = (await gw.request('GET', '/v1/documents?source_type=reminder&limit=1&offset=1')).json();
    expect(page).toMatchObject({ count: 1, total: 2, limit: 1, offset: 1 });
    for (const bad of ['limit=0', 'limit=201', 'offset=-1', 'limit=abc', 'source_type=slack']) {
      const r = await gw.request('GET', `/v1/documents?${bad}`);
      expect(r.statusCode, bad).toBe(422);
      expect(r.json().detail[0].loc[0]).toBe('query');
    }
  });

  it('lists the documents of a date range and of a person, newest first (a timeline drill-down without a query)', async () => {
    const dated = (id: string, when: string, from?: string) =>
      gw.request('POST', '/v1/ingest', noteBody({
        source_type: 'calendar_event', source_id: id, content: { data: `Event ${id}` }, content_timestamp: when,
        ...(from ? { people: [{ identifier: from, role: 'sender', display_name: 'Nora Drill' }] } : {}),
      }));
    await dated('ev-oct', '2025-10-31T23:30:00Z');
    await dated('ev-nov-1', '2025-11-01T00:00:00Z', 'nora@example.com');
    await dated('ev-nov-30', '2025-11-30T22:00:00Z');
    await dated('ev-nov-12', '2025-11-12T10:00:00Z', 'nora@example.com');
    await dated('ev-dec', '2025-12-01T00:00:00Z');
    const nov = (await gw.request('GET', '/v1/documents?source_type=calendar_event&start_date=2025-11-01&end_date=2025-11-30')).json();
    // The bare end date includes its whole day; newest first.
    expect(nov.documents.map((d: any) => d.external_id)).toEqual(['ev-nov-30', 'ev-nov-12', 'ev-nov-1']);
    expect(nov.total).toBe(3);
    const nora = (await gw.request('GET', '/v1/documents?source_type=calendar_event&person=NORA@example.com')).json();
    expect(nora.documents.map((d: any) => d.external_id)).toEqual(['ev-nov-12', 'ev-nov-1']);
    const since = (await gw.request('GET', '/v1/documents?source_type=calendar_event&start_date=2025-11-15T00:00:00Z')).json();
    expect(since.documents.map((d: any) => d.external_id)).toEqual(['ev-dec', 'ev-nov-30']);
    for (const bad of ['start_date=yesterday', 'end_date=2025-13-45', 'start_date=2025-12-01&end_date=2025-11-01']) {
      const r = await gw.request('GET', `/v1/documents?${bad}`);
      expect(r.statusCode, bad).toBe(422);
      expect(r.json().detail[0].loc[0]).toBe('query');
    }
  });

  it('PATCH makes a new version and reports how many chunks were queued', async () => {
    const para = 'Quarterly planning notes with many details about budgets and hiring. ';
    const sub = (await gw.request('POST', '/v1/ingest', noteBody({ content: { data: para.repeat(40) } }))).json();
    const newText = `${para.repeat(40)} Added a closing paragraph.`;
    const res = await gw.request('PATCH', `/v1/documents/${sub.doc_id}`, { text: newText, metadata: { edited: true } });
    expect(res.statusCode).toBe(200);
    const up = res.json();
    expect(up).toMatchObject({ status: 'updated', previous_version_id: sub.doc_id, version_number: 2 });
    const chunks = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunk_documents WHERE doc_id = $1', [
      up.doc_id,
    ]);
    // requeue_for_embedding defaults to true: every chunk of the new version goes back to the queue.
    expect(up.chunks_requeued).toBe(chunks.rows[0].n);
    const doc = (await gw.request('GET', `/v1/doc/${up.doc_id}`)).json();
    expect(doc.metadata.edited).toBe(true);
    // The old version can no longer be edited.
    const stale = await gw.request('PATCH', `/v1/documents/${sub.doc_id}`, { text: 'x', metadata: {} });
    expect(stale.statusCode).toBe(409);
    const missing = await gw.request('PATCH', '/v1/documents/00000000-0000-4000-8000-000000000000', { text: 'x', metadata: {} });
    expect(missing.statusCode).toBe(404);
  });

  it('answers 404 for a document that does not exist', async () => {
    const res = await gw.request('GET', '/v1/doc/00000000-0000-4000-8000-000000000000');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ detail: 'Document not found' });
  });

  it('soft-deletes through the catalog API', async () => {
    const sub = (await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'to-delete' }))).json();
    const del = await gw.request('DELETE', `/v1/catalog/documents/${sub.doc_id}`);
    expect(del.statusCode).toBe(202);
    const doc = (await gw.request('GET', `/v1/doc/${sub.doc_id}`)).json();
    expect(doc.is_active_version).toBe(false);
    const list = (await gw.request('GET', '/v1/documents?limit=200')).json();
    expect(list.documents.map((d: any) => d.doc_id)).not.toContain(sub.doc_id);
    // The same content again after a delete is a re-add: a new active version.
    const again = (await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'to-delete' }))).json();
    expect(again).toMatchObject({ duplicate: false, version_number: 2 });
  });
});
