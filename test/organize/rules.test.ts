/**
 * Issue 44 items 2 and 4 through the real gateway: a tagging rule tags what its query matches now and what
 * is ingested later (after commit, in the background), can be edited (its tags follow) and removed (with its
 * tags, or without); saved searches count what they match and what is new since they were last looked at.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
const ids: Record<string, string> = {};
const before = process.env.TAG_RULES_POLL_MS;

async function ingest(body: Record<string, unknown>): Promise<string> {
  const r = await gw.request('POST', '/v1/ingest', body);
  expect(r.statusCode, r.body).toBeLessThan(300);
  return r.json().doc_id;
}

async function tagged(tag: string): Promise<string[]> {
  const r = await gw.request('GET', `/v1/search?${new URLSearchParams({ q: `tag:${tag}`, k: '50' })}`);
  expect(r.statusCode, r.body).toBe(200);
  return r.json().hits.map((h: any) => h.document_id).sort();
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const note = (title: string, data: string) => noteBody({ title, content: { mime_type: 'text/plain', data } });

beforeAll(async () => {
  process.env.TAG_RULES_POLL_MS = '100';
  gw = await startTestGateway();
  ids.a = await ingest(note('Electricity invoice', 'Invoice for electricity, March.'));
  ids.b = await ingest(note('Water invoice', 'Invoice for water, March.'));
  ids.c = await ingest(note('Garden', 'The tulips are out.'));
}, 120_000);

afterAll(async () => {
  if (before === undefined) delete process.env.TAG_RULES_POLL_MS;
  else process.env.TAG_RULES_POLL_MS = before;
  await gw?.close();
});

describe('tagging rules (issue 44)', () => {
  it('tags what the query matches now, and documents ingested later', async () => {
    const r = await gw.request('POST', '/v1/tags/rules', { tag: 'Bills', query: 'invoice' });
    expect(r.statusCode, r.body).toBe(201);
    const { rule, tagged: now } = r.json();
    ids.rule = rule.rule_id;
    expect(now).toBe(2);
    expect(rule).toMatchObject({ tag: 'bills', query: 'invoice', documents: 2 });
    expect(await tagged('bills')).toEqual([ids.a, ids.b].sort());

    ids.d = await ingest(note('Gas invoice', 'Invoice for gas, April.'));
    ids.e = await ingest(note('Roses', 'The roses need water.'));
    const got = await until(() => tagged('bills'), (v) => v.includes(ids.d));
    expect(got).toEqual([ids.a, ids.b, ids.d].sort());
    const on = (await gw.request('GET', `/v1/tags/on?doc_id=${ids.d}`)).json();
    expect(on.document).toEqual([{ name: 'bills', origin: `rule:${ids.rule}` }]);
  });

  it('leaves a tag taken off by hand off (a rule looks at a document once, when it arrives)', async () => {
    await gw.request('POST', '/v1/tags/remove', { tag: 'bills', doc_ids: [ids.d] });
    ids.f = await ingest(note('Phone invoice', 'Invoice for the phone.'));
    await until(() => tagged('bills'), (v) => v.includes(ids.f));
    expect(await tagged('bills')).toEqual([ids.a, ids.b, ids.f].sort());
  });

  it('lists rules, edits them (the tags follow the new name) and removes them with or without their tags', async () => {
    const list = (await gw.request('GET', '/v1/tags/rules')).json().rules;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ rule_id: ids.rule, tag: 'bills', documents: 3 });

    const p = await gw.request('PATCH', `/v1/tags/rules/${ids.rule}`, { tag: 'finance/bills' });
    expect(p.statusCode, p.body).toBe(200);
    expect(await tagged('bills')).toEqual([]);
    expect(await tagged('finance/bills')).toEqual([ids.a, ids.b, ids.d, ids.f].sort());

    // A tag given by hand as well is not the rule's: it stays when the rule goes with its tags.
    await gw.request('POST', '/v1/tags/add', { tag: 'finance/bills', doc_ids: [ids.c] });
    const d = await gw.request('DELETE', `/v1/tags/rules/${ids.rule}?remove_tags=true`);
    expect(d.json()).toEqual({ rule_id: ids.rule, tags_removed: 4 });
    expect(await tagged('finance/bills')).toEqual([ids.c]);
    expect((await gw.request('GET', '/v1/tags/rules')).json().rules).toEqual([]);

    const keep = (await gw.request('POST', '/v1/tags/rules', { tag: 'water', query: 'water' })).json().rule.rule_id;
    expect((await gw.request('DELETE', `/v1/tags/rules/${keep}`)).json().tags_removed).toBe(0);
    expect(await tagged('water')).toEqual([ids.b, ids.e].sort());
  });

  it('refuses a bad rule with a 422 detail and an unknown one with a 404', async () => {
    const bad = await gw.request('POST', '/v1/tags/rules', { tag: 'no spaces', query: 'x' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['body', 'tag']);
    expect((await gw.request('POST', '/v1/tags/rules', { tag: 'ok', query: '   ' })).statusCode).toBe(422);
    expect((await gw.request('DELETE', '/v1/tags/rules/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await gw.request('PATCH', '/v1/tags/rules/00000000-0000-4000-8000-000000000000', { query: 'x' })).statusCode).toBe(404);
    expect((await gw.request('GET', '/v1/tags/rules')).json().rules).toEqual([]);
  });
});

describe('saved searches (issue 44)', () => {
  it('saves a query with its filters, counts it, and counts what is new since it was last looked at', async () => {
    const put = await gw.request('PUT', '/v1/saved/Water', { query: 'water', filters: { source_type: 'note' } });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ name: 'water', query: 'water', filters: { source_type: 'note' }, count: 2, new_since_seen: 2, seen_at: null });

    const run = await gw.request('GET', '/v1/saved/water/run?k=10');
    expect(run.statusCode, run.body).toBe(200);
    expect(run.json().hits.map((h: any) => h.document_id).sort()).toEqual([ids.b, ids.e].sort());
    const seen = (await gw.request('GET', '/v1/saved')).json().saved;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ name: 'water', count: 2, new_since_seen: 0 });
    expect(seen[0].seen_at).not.toBeNull();

    ids.g = await ingest(note('Well', 'Water from the well tastes of iron.'));
    const after = (await gw.request('GET', '/v1/saved/water')).json();
    expect(after).toMatchObject({ count: 3, new_since_seen: 1 });
  });

  it('refuses bad names and filters with a 422 detail, unknown names with a 404', async () => {
    expect((await gw.request('PUT', '/v1/saved/has%20space', { query: 'x' })).statusCode).toBe(422);
    const f = await gw.request('PUT', '/v1/saved/dates', { query: 'x', filters: { start_date: '2026-02-01', end_date: '2026-01-01' } });
    expect(f.statusCode).toBe(422);
    expect(f.json().detail[0].loc).toEqual(['body', 'filters', 'end_date']);
    expect((await gw.request('GET', '/v1/saved/nothing/run')).statusCode).toBe(404);
    expect((await gw.request('DELETE', '/v1/saved/nothing')).statusCode).toBe(404);
    expect((await gw.request('DELETE', '/v1/saved/water')).statusCode).toBe(204);
    expect((await gw.request('GET', '/v1/saved')).json().saved).toEqual([]);
  });
});
