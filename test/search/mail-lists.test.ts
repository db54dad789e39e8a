/**
 * Issue 40 items 4, 6, 7 and 8, issue 48 item 3, through the real gateway with messages built by the email
 * collector from real-shaped list mail: a mailing list is a list (the `list:` operator, the list facet, the
 * conversation's venue), not a person (People, the person facet, participants, relationships); `type:email`
 * means email; a bare address finds the mail it is on as sender or recipient; `to:X` finds mail X also sent;
 * relationships can be counted back from the newest message (an archive has a circle).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_REDACTIONS } from '../../src/mail/analyze.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { q, startSearchGateway, type SearchGateway } from './helpers.ts';

const CRLF = (s: string) => s.replace(/\r?\n/g, '\r\n');
const src = { sourceType: 'email_local' as const, prefix: 'email', redaction: { ...ALL_REDACTIONS, emails: false, phones: false }, mailbox: 'INBOX' };

const LIST_HEADERS = `Sender: linux-mips-owner@vger.kernel.org
Precedence: bulk
List-ID: <linux-mips.vger.kernel.org>
X-Mailing-List: linux-mips@vger.kernel.org`;

const MESSAGES = {
  patch: `From: Paul Cercueil <paul@crapouillou.net>
To: Thomas Bogendoerfer <tsbogend@alpha.franken.de>
Cc: "open list:MIPS" <linux-mips@vger.kernel.org>, stable@vger.kernel.org
${LIST_HEADERS}
Subject: [PATCH] MIPS: ingenic: fix the watchdog clock
Date: Mon, 18 Nov 2019 10:00:00 +0100
Message-ID: <patch-1@crapouillou.net>
Content-Type: text/plain; charset=utf-8

The watchdog clock was gated too early; keep it running.
`,
  applied: `From: Thomas Bogendoerfer <tsbogend@alpha.franken.de>
To: Paul Cercueil <paul@crapouillou.net>
Cc: "open list:MIPS" <linux-mips@vger.kernel.org>, stable@vger.kernel.org
${LIST_HEADERS}
Subject: Re: [PATCH] MIPS: ingenic: fix the watchdog clock
Date: Tue, 19 Nov 2019 09:00:00 +0100
Message-ID: <applied-1@alpha.franken.de>
In-Reply-To: <patch-1@crapouillou.net>
References: <patch-1@crapouillou.net>
Content-Type: text/plain; charset=utf-8

Applied to mips-fixes, thanks.
`,
  thanks: `From: Paul Cercueil <paul@crapouillou.net>
To: Thomas Bogendoerfer <tsbogend@alpha.franken.de>
Subject: Thanks for the review
Date: Wed, 20 Nov 2019 09:00:00 +0100
Message-ID: <thanks-1@crapouillou.net>
Content-Type: text/plain; charset=utf-8

Thanks again for picking up the clock fix so quickly.
`,
  // Greg queues patches by writing to himself with stable in Cc.
  queue: `From: Greg Kroah-Hartman <gregkh@linuxfoundation.org>
To: gregkh@linuxfoundation.org
Cc: stable@vger.kernel.org
Subject: patch "usb: fix a leak" added to usb-linus
Date: Thu, 21 Nov 2019 08:00:00 +0100
Message-ID: <queue-1@linuxfoundation.org>
Content-Type: text/plain; charset=utf-8

This is a note to let you know that I've just added the patch to my tree.
`,
  // The address only in the text.
  mention: `From: Paul Cercueil <paul@crapouillou.net>
To: Thomas Bogendoerfer <tsbogend@alpha.franken.de>
Subject: Backports
Date: Fri, 22 Nov 2019 08:00:00 +0100
Message-ID: <mention-1@crapouillou.net>
Content-Type: text/plain; charset=utf-8

Next time please Cc stable@vger.kernel.org for the backports.
`,
};

describe('mailing lists, type families, addresses (issues 40 and 48)', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};

  beforeAll(async () => {
    g = await startSearchGateway();
    for (const [k, raw] of Object.entries(MESSAGES)) {
      const msg = await parseCollectedMessage(Buffer.from(CRLF(raw)));
      const r = await g.ingest(buildEmailDocument(msg, src).document as unknown as Record<string, unknown>);
      D[k] = r.doc_id;
    }
  });
  afterAll(async () => g?.close());

  const ids = (body: any) => new Set(body.hits.map((h: any) => h.document_id));

  it('the collector records the list as a list: Sender is no sender, the list address is marked, the List-Id is metadata', async () => {
    const msg = await parseCollectedMessage(Buffer.from(CRLF(MESSAGES.patch)));
    const d = buildEmailDocument(msg, src).document;
    expect(d.people.filter((p) => p.role === 'sender').map((p) => p.identifier)).toEqual(['paul@crapouillou.net']);
    expect(d.people.find((p) => p.identifier === 'linux-mips@vger.kernel.org')?.metadata).toEqual({ list: 'linux-mips.vger.kernel.org' });
    expect(d.metadata.list).toEqual({ id: 'linux-mips.vger.kernel.org', name: 'linux-mips', address: 'linux-mips@vger.kernel.org' });
    // Writing to yourself: sender and recipient.
    const own = buildEmailDocument(await parseCollectedMessage(Buffer.from(CRLF(MESSAGES.queue))), src).document;
    expect(own.people.filter((p) => p.identifier === 'gregkh@linuxfoundation.org').map((p) => p.role)).toEqual(['sender', 'recipient']);
  });

  it('a bare address finds the mail it is on as sender or recipient, and where the text holds it', async () => {
    const body = (await g.get(q({ q: 'stable@vger.kernel.org' }))).json();
    expect(ids(body)).toEqual(new Set([D.patch, D.applied, D.queue, D.mention]));
    expect(body.total).toBe(4);
    const sender = (await g.get(q({ q: 'tsbogend@alpha.franken.de' }))).json();
    expect(ids(sender)).toEqual(new Set([D.patch, D.applied, D.thanks, D.mention]));
  });

  it('to:X finds the mail X sent to themselves', async () => {
    const body = (await g.get(q({ q: 'to:gregkh@linuxfoundation.org' }))).json();
    expect(ids(body)).toEqual(new Set([D.queue]));
    const from = (await g.get(q({ q: 'from:gregkh@linuxfoundation.org' }))).json();
    expect(ids(from)).toEqual(new Set([D.queue]));
  });

  it('list:NAME and list:ID find the mail that came through the list; -list: leaves it out', async () => {
    for (const v of ['linux-mips', 'linux-mips.vger.kernel.org', 'linux-mips@vger.kernel.org']) {
      const body = (await g.get(q({ q: `list:${v}` }))).json();
      expect(ids(body), v).toEqual(new Set([D.patch, D.applied]));
    }
    const not = (await g.get(q({ q: 'clock -list:linux-mips' }))).json();
    expect(ids(not)).toEqual(new Set([D.thanks]));
    expect((await g.get(q({ q: 'list:linux-arm' }))).json().total).toBe(0);
  });

  it('lists are a facet of their own, never in the person facet, and a conversation names its list as its venue', async () => {
    const body = (await g.get(q({ q: 'watchdog clock', group: 'thread' }))).json();
    expect(body.facets.list).toEqual([{ value: 'linux-mips.vger.kernel.org', display_name: 'linux-mips', count: 2 }]);
    const names = body.facets.person.map((p: any) => p.display_name);
    expect(names).toContain('Paul Cercueil');
    expect(names.some((n: string) => /list|linux-mips/i.test(n))).toBe(false);
    const hit = body.hits.find((h: any) => h.document_id === D.applied || h.document_id === D.patch);
    const who = hit.conversation.participants.map((p: any) => p.identifier);
    expect(who[0]).toBe('paul@crapouillou.net');
    expect(who).not.toContain('linux-mips@vger.kernel.org');
    expect(who).not.toContain('linux-mips-owner@vger.kernel.org');
    expect(hit.conversation.lists).toEqual([{ list_id: 'linux-mips.vger.kernel.org', name: 'linux-mips' }]);
  });

  it('People leaves lists out of the busiest', async () => {
    const body = (await g.get('/search/people?sort=messages&limit=50')).json();
    const emails = body.results.flatMap((p: any) => p.emails);
    expect(emails).toContain('paul@crapouillou.net');
    expect(emails).not.toContain('linux-mips@vger.kernel.org');
    expect(emails).not.toContain('linux-mips-owner@vger.kernel.org');
    expect((await g.get('/search/people?q=linux-mips')).json().total).toBe(0);
  });

  it('type:email and source_type=email mean email, whichever collector stored it; exact types still work', async () => {
    expect(ids((await g.get(q({ q: 'watchdog type:email' }))).json())).toEqual(new Set([D.patch, D.applied]));
    expect((await g.get(q({ q: 'watchdog', source_type: 'email' }))).json().total).toBe(2);
    expect((await g.get(q({ q: 'watchdog type:email_local' }))).json().total).toBe(2);
    expect((await g.get(q({ q: 'watchdog type:note' }))).json().total).toBe(0);
    // A family and a type of another family contradict each other.
    expect((await g.get(q({ q: 'watchdog type:chat', source_type: 'email' }))).json().total).toBe(0);
  });

  it('relationships of an archive: counted back from the newest message, and all time; a list is never ranked', async () => {
    expect((await g.app.inject({ method: 'PUT', url: '/v1/admin/self-person', headers: { authorization: `Bearer ${(await import('../helpers/gateway.ts')).TEST_TOKEN}` }, payload: { identifier: 'paul@crapouillou.net' } })).statusCode).toBe(200);
    const now = (await g.get('/v1/crm/relationships/top?window=90d')).json();
    expect(now.relationships).toEqual([]);
    const latest = (await g.get('/v1/crm/relationships/top?window=90d&as_of=latest')).json();
    const ranked = (body: any) => body.relationships.map((r: any) => r.display_name);
    // Thomas first; stable@ (a recipient nothing says is a list) after him; the list never.
    expect(ranked(latest)[0]).toBe('Thomas Bogendoerfer');
    expect(latest.relationships.flatMap((r: any) => r.emails)).not.toContain('linux-mips@vger.kernel.org');
    expect(latest.window_end).toBe('2019-11-22T07:00:00.000Z');
    expect(latest.relationships[0].features.messages_30d).toBeGreaterThan(0);
    const all = (await g.get('/v1/crm/relationships/top?window=all')).json();
    expect(all.window).toBe('all');
    expect(all.window_start).toBeNull();
    expect(ranked(all)[0]).toBe('Thomas Bogendoerfer');
    expect(all.relationships.flatMap((r: any) => r.emails)).not.toContain('linux-mips@vger.kernel.org');
    const dated = (await g.get('/v1/crm/relationships/top?window=30d&as_of=2019-12-01')).json();
    expect(ranked(dated)[0]).toBe('Thomas Bogendoerfer');
    const bad = await g.get('/v1/crm/relationships/top?as_of=yesterday');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toEqual(['query', 'as_of']);
  });

  it('the upgrade reclassifies list addresses stored before it (migration 190)', async () => {
    // Mail stored the old way: the bounce address as a second sender, the list as a plain recipient.
    await g.ingest({
      source_type: 'email_local',
      source_id: 'email:old-1@example.org',
      title: 'Re: old thread',
      content: { mime_type: 'text/plain', data: 'An old list message about the bootloader.' },
      content_timestamp: '2019-10-01T10:00:00Z',
      people: [
        { identifier: 'ralf@linux-mips.org', identifier_type: 'email', role: 'sender', display_name: 'Ralf' },
        { identifier: 'linux-arm-kernel-bounces@lists.infradead.org', identifier_type: 'email', role: 'sender', display_name: null },
        { identifier: 'linux-arm-kernel@lists.infradead.org', identifier_type: 'email', role: 'recipient', display_name: null },
        { identifier: 'lkml@vger.kernel.org', identifier_type: 'email', role: 'recipient', display_name: 'open list' },
      ],
      metadata: { message_id: 'old-1@example.org', list_id: 'ARM kernel <linux-arm-kernel.lists.infradead.org>' },
    });
    const before = (await g.get('/search/people?q=linux-arm')).json();
    expect(before.total).toBe(2);
    const sql = fs.readFileSync(new URL('../../src/db/migrations/190_mailing_lists.sql', import.meta.url), 'utf8');
    // The migration's reclassification, run again on what is stored now.
    await g.db.exec(sql.replace(/^ALTER TABLE[^;]*;\s*$/m, '').replace(/^CREATE INDEX[^;]*;\s*$/m, ''));
    expect((await g.get('/search/people?q=linux-arm')).json().total).toBe(0);
    const lists = await g.db.query<{ value_canonical: string; list_id: string }>(
      `SELECT pi.value_canonical, p.list_id FROM people p JOIN person_identifiers pi ON pi.person_id = p.person_id
        WHERE p.list_id IS NOT NULL AND pi.value_canonical IN ('linux-arm-kernel-bounces@lists.infradead.org', 'linux-arm-kernel@lists.infradead.org', 'lkml@vger.kernel.org')
        ORDER BY 1`,
    );
    expect(lists.rows).toEqual([
      { value_canonical: 'linux-arm-kernel-bounces@lists.infradead.org', list_id: 'linux-arm-kernel.lists.infradead.org' },
      { value_canonical: 'linux-arm-kernel@lists.infradead.org', list_id: 'linux-arm-kernel.lists.infradead.org' },
      { value_canonical: 'lkml@vger.kernel.org', list_id: 'lkml.vger.kernel.org' },
    ]);
  });
});

describe('one person under several addresses (issue 40, item 5)', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway();
    const mail = (id: string, from: string, name: string, to: string) =>
      g.ingest({
        source_type: 'email_local',
        source_id: `email:${id}`,
        title: `Hello ${id}`,
        content: { mime_type: 'text/plain', data: `A message ${id}.` },
        content_timestamp: '2024-05-01T10:00:00Z',
        people: [
          { identifier: from, identifier_type: 'email', role: 'sender', display_name: name },
          { identifier: to, identifier_type: 'email', role: 'recipient', display_name: 'Me' },
        ],
      });
    await mail('a1', 'paul@crapouillou.net', 'Paul Cercueil', 'me@example.org');
    await mail('a2', 'paul@crapouillou.net', 'Paul Cercueil', 'me@example.org');
    await mail('a3', 'paul.cercueil@analog.com', 'Paul  cercueil', 'me@example.org');
    await mail('a4', 'other@example.org', 'Somebody Else', 'me@work.example.org');
    await mail('a5', 'me@work.example.org', 'Me', 'other@example.org');
  });
  afterAll(async () => g?.close());

  it('people with one name and different addresses are offered, not merged; merging takes the owner saying so', async () => {
    const groups = (await g.get('/v1/people/merge-candidates')).json().groups;
    const paul = groups.find((x: any) => /paul/i.test(x.display_name));
    expect(paul.people.map((p: any) => p.emails[0]).sort()).toEqual(['paul.cercueil@analog.com', 'paul@crapouillou.net']);
    expect(paul.people[0].message_count).toBe(2);
    // Offered only: still two people.
    expect((await g.get('/search/people?q=paul')).json().total).toBe(2);

    const merged = await g.post('/v1/people/merge', { target: 'paul@crapouillou.net', source: 'paul.cercueil@analog.com' });
    expect(merged.statusCode).toBe(200);
    expect(merged.json().reason).toBe('manual');
    const now = (await g.get('/search/people?q=paul')).json();
    expect(now.total).toBe(1);
    expect(now.results[0].emails.sort()).toEqual(['paul.cercueil@analog.com', 'paul@crapouillou.net']);
    expect(now.results[0].message_count).toBe(3);
    expect((await g.get('/v1/people/merge-candidates')).json().groups.some((x: any) => /paul/i.test(x.display_name))).toBe(false);
  });

  it('the owner claims their other address from the "This is me" step: the group of their name', async () => {
    const me = (await g.get('/search/people?q=me@example.org')).json().results[0];
    const mine = (await g.get(`/v1/people/merge-candidates?person_id=${me.person_id}`)).json().groups;
    expect(mine).toHaveLength(1);
    expect(mine[0].people.flatMap((p: any) => p.emails).sort()).toEqual(['me@example.org', 'me@work.example.org']);
  });

  it('bad merges are a clear 4xx and change nothing', async () => {
    expect((await g.post('/v1/people/merge', { target: 'nobody@example.org', source: 'paul@crapouillou.net' })).statusCode).toBe(404);
    const same = await g.post('/v1/people/merge', { target: 'paul@crapouillou.net', source: 'paul.cercueil@analog.com' });
    expect(same.statusCode).toBe(422);
    expect(same.json().detail[0].msg).toMatch(/already one person/);
    expect((await g.post('/v1/people/merge', { target: 'paul@crapouillou.net' })).statusCode).toBe(422);
    expect((await g.get('/search/people?q=other@example.org')).json().total).toBe(1);
  });
});
