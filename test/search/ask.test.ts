/**
 * POST /v1/ask through the gateway, with the default embedding model (USE-lite) and the lexical
 * index: answers are the sentences or lines that answer, at most 400 characters, each cited with
 * its exact span; nothing found is an answer; metadata, duplicates and quoted copies never make
 * it into an answer; a configured LLM gets the same ranked sentences and falls back, saying why.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUseLiteEmbedder } from '../../src/embedding/providers/use-lite.ts';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import type { Embedder } from '../../src/embedding/types.ts';
import { NOTHING_FOUND_ANSWER, validateMarkers } from '../../src/search/ask.ts';
import { doc, startSearchGateway, type SearchGateway } from './helpers.ts';

const BOOKING = `Dear Alex Morgan,

Thank you for choosing Casa do Rio. We are delighted to confirm your reservation in Porto and look forward to welcoming you.

Confirmation number: CDR-48213
Guest: Alex Morgan
Check-in: 12 December 2026 (from 15:00)
Check-out: 15 December 2026 (until 11:00)
Room: Double room, garden view
Total price: €480.00, taxes included
Address: Rua das Flores 27, Porto

Breakfast is served daily in the garden restaurant. Free cancellation is possible up to 48 hours before arrival.

Kind regards,
Marta Duarte
Reservations, Casa do Rio

This email and any attachments are confidential and intended solely for the addressee.`;

/** The same confirmation saved as a file before file headers left the text (spec-notes A4.1 format). */
const BOOKING_FILE = `Filename: CasaDoRio-confirmation-CDR-48213.pdf
Source Path: email_local/8f2c/CasaDoRio-confirmation-CDR-48213.pdf
Modified: 2026-11-27T04:42:08Z

OCR:
${BOOKING}`;

const INVOICE = `Zenith Heating
Rua Augusta 120, Lisbon

INVOICE INV-2026-0042
Date: 3 March 2026
Bill to: Alex Morgan

Description                          Qty     Amount
Boiler service                       1       €120.00
VAT 23%                                      €27.60

Total due: €147.60
Payment due by 2 April 2026.
Please transfer to IBAN PT50 0002 0123 1234 5678 9015 4, quoting the invoice number.`;

const REPAIR = `Hi Alex,

The boiler was repaired on Tuesday by Rui Costa from Zenith Heating. He replaced the pressure valve and bled the radiators.
The next inspection is due in March 2027.

Best,
Sofia`;

const FERRY = `Hi Alex!

Good news, I got the tickets for Culatra. The ferry leaves from the old harbour on Saturday at 09:15, so let's meet there twenty minutes before.
The tickets were €7.50 each, you can pay me back whenever.

Cheers,
Ines`;

const FERRY_REPLY = `Perfect, thanks for organising! I will bring snacks as well.

On Thu, 4 Jun 2026 at 18:02, Ines Alves <ines@example.com> wrote:
${FERRY.split('\n')
  .map((l) => `> ${l}`)
  .join('\n')}`;

const NOTES = [
  'The garden fence needs painting before summer. Buy green paint at the hardware store on Elm Street.',
  'Call the bank about the new card number; the old card expires in May.',
  'Library books are due back on Friday. The library opens at 10:00 on weekdays.',
];

let model: Embedder;
const ids: Record<string, string> = {};

async function seed(g: SearchGateway): Promise<void> {
  const add = async (key: string, text: string, over: Record<string, unknown> = {}) => {
    ids[key] = (await g.ingest(doc(text, over))).doc_id;
  };
  const mail = (from: [string, string]) => ({
    source_type: 'email',
    people: [
      { identifier: from[0], identifier_type: 'email', role: 'sender', display_name: from[1] },
      { identifier: 'alex.morgan@example.org', identifier_type: 'email', role: 'recipient', display_name: 'Alex Morgan' },
    ],
  });
  await add('booking', BOOKING, { ...mail(['reservas@casadorio.example.com', 'Casa do Rio Reservations']), title: 'Your reservation at Casa do Rio is confirmed' });
  // The same file twice (two folders): one text, two documents.
  await add('file1', BOOKING_FILE, { source_type: 'localfs', title: 'CasaDoRio-confirmation-CDR-48213.pdf' });
  await add('file2', BOOKING_FILE, { source_type: 'localfs', title: 'CasaDoRio-confirmation-CDR-48213.pdf' });
  await add('invoice', INVOICE, { source_type: 'localfs', title: 'Zenith-Heating-INV-2026-0042.pdf' });
  await add('repair', REPAIR, { ...mail(['sofia@example.com', 'Sofia Lima']), title: 'Boiler repaired' });
  await add('ferry', FERRY, { ...mail(['ines@example.com', 'Ines Alves']), title: 'Ferry to Culatra' });
  await add('ferryReply', FERRY_REPLY, { source_type: 'email', title: 'Re: Ferry to Culatra' });
  for (const [i, n] of NOTES.entries()) await add(`note${i}`, n);
  const chunks = await g.db.query<{ chunk_id: string; text: string }>('SELECT chunk_id, text FROM chunks');
  const vectors = await model.embed(chunks.rows.map((c) => c.text), 'passage');
  await storeEmbeddings(g.db, chunks.rows.map((c, i) => ({ chunk_id: c.chunk_id, model: model.name, vector: vectors[i] })));
}

async function ask(g: SearchGateway, query: string, k = 5) {
  const res = await g.post('/v1/ask', { query, k });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** The answer before its first marker: what a person reads first. */
const firstPart = (answer: string) => answer.split(/\s*\[1\]/)[0];

/** Every citation's span holds its quote, in the chunk and in the document text. */
async function expectExactSpans(g: SearchGateway, body: any) {
  for (const c of body.citations) {
    const chunk = (await g.db.query<{ text: string }>('SELECT text FROM chunks WHERE chunk_id = $1', [c.chunk_id])).rows[0].text;
    const quoted = chunk.slice(c.start, c.end).replace(/\s*\n[\s>]*/g, ' ');
    expect(quoted.replace(/\s+/g, ' ')).toBe(c.quote.replace(/^…|…$/g, ''));
    const text = (await g.db.query<{ text: string }>('SELECT text FROM documents WHERE doc_id = $1', [c.document_id])).rows[0].text;
    expect(text.slice(c.doc_start, c.doc_end)).toBe(chunk.slice(c.start, c.end));
  }
}

beforeAll(async () => {
  model = await createUseLiteEmbedder();
}, 120_000);

describe('POST /v1/ask (extractive)', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway({ embedder: model });
    await seed(g);
  }, 120_000);
  afterAll(async () => g?.close());

  it('a booking number: the line that holds it, first, cited with its exact span, no file header', async () => {
    const body = await ask(g, 'What is the Casa do Rio confirmation number?');
    expect(body.answer_mode).toBe('extractive');
    expect(firstPart(body.answer)).toMatch(/CDR-48213/);
    expect(firstPart(body.answer).length).toBeLessThanOrEqual(120);
    expect(body.answer.length).toBeLessThanOrEqual(400);
    expect(body.answer).not.toMatch(/Filename:|Source Path:|Modified:|OCR:/);
    expect(body.citations[0].quote).toMatch(/CDR-48213/);
    for (const m of body.answer.matchAll(/\[(\d+)\]/g)) expect(Number(m[1])).toBeLessThanOrEqual(body.citations.length);
    await expectExactSpans(g, body);
  });

  it('a date: the check-in line, not the greeting', async () => {
    const body = await ask(g, 'When do I check in at Casa do Rio?');
    expect(firstPart(body.answer)).toMatch(/12 December 2026/);
    expect(firstPart(body.answer)).not.toMatch(/Dear|Thank you/);
    expect(body.citations[0].quote).toMatch(/^Check-in/);
    await expectExactSpans(g, body);
  });

  it('an amount: the total of the invoice, not its VAT line', async () => {
    const body = await ask(g, 'How much is the Zenith Heating invoice?');
    expect(firstPart(body.answer)).toMatch(/€147\.60/);
    expect(body.citations[0].document_id).toBe(ids.invoice);
    await expectExactSpans(g, body);
  });

  it('who-questions: the sentence naming the person, or the signature line of a confirmation', async () => {
    const repair = await ask(g, 'Who repaired the boiler?');
    expect(firstPart(repair.answer)).toMatch(/Rui Costa/);
    expect(firstPart(repair.answer).length).toBeLessThanOrEqual(150);
    expect(repair.citations[0].document_id).toBe(ids.repair);
    const signed = await ask(g, 'Who confirmed my reservation at Casa do Rio?');
    expect(firstPart(signed.answer)).toMatch(/Marta Duarte/);
    expect(firstPart(signed.answer).length).toBeLessThanOrEqual(60);
  });

  it('who sent it and when: the message\'s own sender and date, not a name or a day its text mentions', async () => {
    const who = await ask(g, 'Who sent the message about the boiler repair?');
    expect(firstPart(who.answer)).toMatch(/^Sofia Lima sent it/);
    expect(firstPart(who.answer)).not.toMatch(/Rui Costa/);
    expect(who.citations[0].document_id).toBe(ids.repair);
    const stored = (await g.get(`/v1/doc/${ids.repair}`)).json();
    const when = await ask(g, 'When did Sofia write about the boiler repair?');
    expect(firstPart(when.answer)).toMatch(new RegExp(`^On ${stored.content_timestamp.slice(0, 10)}, from Sofia Lima`));
    expect(when.citations[0].document_id).toBe(ids.repair);
    // A question about what the message says is answered from its text, as before.
    expect(firstPart((await ask(g, 'Who repaired the boiler?')).answer)).toMatch(/Rui Costa/);
  });

  it('a question nothing answers: said plainly, nothing cited, though other numbers and cards are stored', async () => {
    for (const q of ['What is my passport number?', 'When does my flight to Reykjavik leave?']) {
      const body = await ask(g, q);
      expect(body, q).toMatchObject({ answer: NOTHING_FOUND_ANSWER, answer_mode: 'none', citations: [] });
    }
  });

  it('the same file twice and its e-mail: the answer quotes it once', async () => {
    const body = await ask(g, 'What is the total price at Casa do Rio?');
    expect(body.answer.match(/€480\.00/g)).toHaveLength(1);
    const quotes = body.citations.map((c: any) => c.quote);
    expect(new Set(quotes).size).toBe(quotes.length);
    expect([ids.booking, ids.file1, ids.file2]).toContain(body.citations[0].document_id);
  });

  it('a quoted reply: the original message is cited, its quoted copy is not repeated', async () => {
    const body = await ask(g, 'When does the ferry to Culatra leave?');
    expect(firstPart(body.answer)).toMatch(/09:15/);
    expect(body.answer.match(/09:15/g)).toHaveLength(1);
    expect(body.citations[0].document_id).toBe(ids.ferry);
    expect(body.answer).not.toMatch(/^>|wrote:/m);
    await expectExactSpans(g, body);
  });

  it('header lines of stored files are never quoted, even when the question uses their words', async () => {
    const body = await ask(g, 'What is the source path and modified date of the Casa do Rio confirmation file?');
    expect(body.answer).not.toMatch(/Source Path|Filename|Modified:|email_local/);
  });

  it('k defaults to 5 and a query matching nothing is answered "nothing found"', async () => {
    const body = await ask(g, 'quasar xylophonist');
    expect(body).toMatchObject({ answer: NOTHING_FOUND_ANSWER, answer_mode: 'none', citations: [] });
  });
});

/** A local chat server speaking the Ollama (/api/chat) and OpenAI (/v1/chat/completions) APIs. */
function chatServer(reply: () => { status: number; text: string; delayMs?: number }) {
  const seen: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
      const r = reply();
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(r.status, { 'content-type': 'application/json' });
        if (r.status !== 200) return res.end(JSON.stringify({ error: 'boom' }));
        if (req.url === '/api/chat') return res.end(JSON.stringify({ message: { role: 'assistant', content: r.text }, done: true }));
        res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: r.text } }] }));
      };
      if (r.delayMs) setTimeout(send, r.delayMs);
      else send();
    });
  });
  return {
    seen,
    async start() {
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** The number the prompt gave the excerpt matching `re`. */
function excerptNumber(prompt: string, re: RegExp): number {
  const line = prompt.split('\n').find((l) => /^\[\d+\]/.test(l) && re.test(l));
  expect(line, prompt).toBeDefined();
  return Number(/^\[(\d+)\]/.exec(line!)![1]);
}

describe('POST /v1/ask with an LLM', () => {
  let reply: { status: number; text: string; delayMs?: number } = { status: 200, text: '' };
  const server = chatServer(() => reply);
  let base = '';
  beforeAll(async () => {
    base = await server.start();
  });
  afterAll(async () => server.close());

  it('ollama: gets the ranked sentences (no header, no footer), its valid markers are kept and renumbered, invented ones removed', { timeout: 240_000 }, async () => {
    const g = await startSearchGateway({ embedder: model, ask: { provider: 'ollama', baseUrl: base, model: 'test-model', timeoutMs: 10_000 } });
    try {
      await seed(g);
      reply = { status: 200, text: 'You check in on 12 December 2026 [__]. See also [99].' };
      // The model's reply names the excerpt the prompt gave the check-in line.
      const first = await ask(g, 'When do I check in at Casa do Rio?');
      const call = server.seen.at(-1);
      expect(call.url).toBe('/api/chat');
      expect(call.body.model).toBe('test-model');
      const prompt = call.body.messages.map((m: any) => m.content).join('\n');
      expect(prompt).not.toMatch(/Filename:|Source Path:|Modified:|confidential/);
      expect(prompt.length).toBeLessThan(4000);
      const n = excerptNumber(prompt, /^\[\d+\] \(.*\) Check-in: 12 December 2026/);
      expect(first.answer_mode).toBe('llm');

      reply = { status: 200, text: `You check in on 12 December 2026 [${n}]. See also [99].` };
      const body = await ask(g, 'When do I check in at Casa do Rio?');
      expect(body.answer_mode).toBe('llm');
      expect(body.answer).toBe('You check in on 12 December 2026 [1]. See also.');
      expect(body.citations).toHaveLength(1);
      expect(body.citations[0].quote).toMatch(/^Check-in: 12 December 2026/);
      await expectExactSpans(g, body);
    } finally {
      await g.close();
    }
  });

  it('openai-compatible: bearer key sent; an HTTP error, a slow model and an unreachable one each fall back to the extractive answer, saying which', { timeout: 240_000 }, async () => {
    const g = await startSearchGateway({
      embedder: model,
      ask: { provider: 'openai', baseUrl: `${base}/v1`, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 1_000 },
    });
    const down = await startSearchGateway({ embedder: model, ask: { provider: 'ollama', baseUrl: 'http://127.0.0.1:9', model: 'x', timeoutMs: 5_000 } });
    try {
      await seed(g);
      await seed(down);
      reply = { status: 200, text: 'Nothing in the excerpts says.' };
      const ok = await ask(g, 'What is the Casa do Rio confirmation number?');
      expect(ok).toMatchObject({ answer_mode: 'llm', answer: 'Nothing in the excerpts says.', citations: [] });
      expect(server.seen.at(-1).url).toBe('/v1/chat/completions');
      expect(server.seen.at(-1).auth).toBe('Bearer sk-test');

      reply = { status: 500, text: '' };
      const failed = await ask(g, 'What is the Casa do Rio confirmation number?');
      expect(failed).toMatchObject({ answer_mode: 'extractive', llm_fallback: 'http_error' });
      expect(failed.llm_error).toMatch(/HTTP 500/);
      expect(firstPart(failed.answer)).toMatch(/CDR-48213/);

      reply = { status: 200, text: 'too late [1]', delayMs: 4_000 };
      const slow = await ask(g, 'What is the Casa do Rio confirmation number?');
      expect(slow).toMatchObject({ answer_mode: 'extractive', llm_fallback: 'timeout' });
      expect(firstPart(slow.answer)).toMatch(/CDR-48213/);

      const unreachable = await ask(down, 'What is the Casa do Rio confirmation number?');
      expect(unreachable).toMatchObject({ answer_mode: 'extractive', llm_fallback: 'unreachable' });
      expect(firstPart(unreachable.answer)).toMatch(/CDR-48213/);
    } finally {
      await g.close();
      await down.close();
    }
  });

  it('marker validation never invents a citation', () => {
    expect(validateMarkers('A [0] B [3] C [1; 2]', 2)).toBe('A B C [1][2]');
    expect(validateMarkers('Nothing relevant [5].', 2)).toBe('Nothing relevant.');
  });
});
