/**
 * The search benchmarks' generated corpus and query plan, deterministic for a given size: emails,
 * chat threads, sms and notes over two years, 300 people, words drawn with a Zipf law from real
 * English (SciFact abstracts when ../shared is present, synthetic words otherwise).
 */
import type { Queryable } from '../../src/db/types.ts';
import { loadScifact } from '../scifact/data.ts';

export interface BenchPerson {
  id: string;
  name: string;
  email: string;
  phone: string;
}

export interface BenchDocument {
  id: string;
  chunk: string;
  source: 'email' | 'chatapp' | 'sms' | 'note';
  thread: string | null;
  title: string | null;
  text: string;
  ts: number;
  sender: BenchPerson;
  to: BenchPerson;
  att: boolean;
}

export interface PlannedQuery {
  kind: 'keywords' | 'phrase' | 'person' | 'dates' | 'thread';
  q: string;
  person?: string;
  start_date?: string;
  end_date?: string;
  thread_id?: string;
  context_window?: number;
}

export interface Corpus {
  people: BenchPerson[];
  /** Thread ids in order of creation. */
  threads: string[];
  /** Documents in batches of `batch` (the generator is streamed so 100k documents never sit in memory twice). */
  batches(batch: number): Generator<BenchDocument[]>;
  /** `n` queries drawn from a 1 % sample of the documents; call after `batches` has run to the end. */
  plan(n: number): PlannedQuery[];
}

export function generateCorpus(size: number): Corpus {
  // Deterministic generator.
  let seed = 42;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
  // Ids come from their own stream so the text stream is the one earlier runs of this bench drew.
  let idSeed = 7;
  const uuid = () => {
    const b = Buffer.alloc(16);
    for (let i = 0; i < 16; i += 4) b.writeUInt32BE((idSeed = (Math.imul(idSeed, 1664525) + 1013904223) >>> 0), i);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = b.toString('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  };

  // Vocabulary: real English words (SciFact abstracts when present), drawn with a Zipf law.
  const sci = loadScifact();
  const counts = new Map<string, number>();
  for (const d of (sci?.corpus ?? []).slice(0, 3000)) {
    for (const w of d.text.toLowerCase().match(/[a-z]{3,}/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  let vocab = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([w]) => w).slice(0, 8000);
  if (vocab.length < 1000) vocab = Array.from({ length: 8000 }, (_, i) => `word${i.toString(36)}`);
  const everyday = 'meeting lunch dinner invoice flight hotel budget report project deadline call tomorrow weekend birthday party doctor appointment school kids car repair garden house rent payment contract review photos holiday train ticket'.split(' ');
  const zipf = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.exp(rnd() * Math.log(vocab.length))) - 1)];
  const sentence = (n: number) => Array.from({ length: n }, () => (rnd() < 0.15 ? pick(everyday) : zipf())).join(' ');

  const people: BenchPerson[] = Array.from({ length: 300 }, (_, i) => ({
    id: uuid(),
    name: `Person ${i}`,
    email: `person${i}@example.com`,
    phone: `+1415555${String(1000 + i).padStart(4, '0')}`,
  }));
  const threads: { id: string; docs: number }[] = [];
  const start = Date.parse('2024-01-01T00:00:00Z');
  const span = 730 * 86_400_000;
  const sample: { text: string; person: string; thread: string | null; ts: number }[] = [];

  function* batches(batch: number): Generator<BenchDocument[]> {
    for (let i = 0; i < size; i += batch) {
      const rows: BenchDocument[] = [];
      for (let j = i; j < Math.min(size, i + batch); j++) {
        const r = rnd();
        const source = r < 0.3 ? 'email' : r < 0.7 ? 'chatapp' : r < 0.85 ? 'sms' : 'note';
        let thread: string | null = null;
        if (source === 'chatapp' || source === 'email') {
          if (threads.length === 0 || rnd() < 0.08) threads.push({ id: uuid(), docs: 0 });
          const t = threads[threads.length - 1 - Math.floor(rnd() * Math.min(5, threads.length))];
          t.docs++;
          thread = t.id;
        }
        const sender = pick(people);
        const to = pick(people);
        const len =
          source === 'email' ? 60 + Math.floor(rnd() * 120) : source === 'note' ? 30 + Math.floor(rnd() * 80) : 5 + Math.floor(rnd() * 25);
        const text = sentence(len);
        const ts = start + Math.floor(rnd() * span);
        rows.push({
          id: uuid(),
          chunk: uuid(),
          source,
          thread,
          text,
          ts,
          title: source === 'email' ? sentence(5) : source === 'note' ? sentence(3) : null,
          sender,
          to,
          att: rnd() < 0.1,
        });
        if (rnd() < 0.01) sample.push({ text, person: sender.email, thread, ts });
      }
      yield rows;
    }
  }

  function plan(n: number): PlannedQuery[] {
    const withThread = sample.filter((x) => x.thread);
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    return Array.from({ length: n }, (): PlannedQuery => {
      const s = pick(sample);
      const words = s.text.split(' ');
      const r = rnd();
      const kw = () => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(words)).join(' ');
      if (r < 0.4) return { kind: 'keywords', q: kw() };
      if (r < 0.6) {
        const at = Math.floor(rnd() * Math.max(1, words.length - 5));
        return { kind: 'phrase', q: words.slice(at, at + 3 + Math.floor(rnd() * 3)).join(' ') };
      }
      if (r < 0.75) return { kind: 'person', q: kw(), person: s.person };
      if (r < 0.9) return { kind: 'dates', q: kw(), start_date: day(s.ts - 30 * 86_400_000), end_date: day(s.ts + 30 * 86_400_000) };
      const t = pick(withThread);
      return { kind: 'thread', q: pick(t.text.split(' ')), thread_id: t.thread!, context_window: 3 };
    });
  }

  return {
    people,
    get threads() {
      return threads.map((t) => t.id);
    },
    batches,
    plan,
  };
}

/** Writes the corpus with bulk SQL: people and identifiers, threads, documents, chunks (marked embedded) and links. */
export async function loadCorpus(db: Queryable, corpus: Corpus): Promise<void> {
  const { people } = corpus;
  await db.query(
    `INSERT INTO people (person_id, display_name, source) SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`,
    [people.map((p) => p.id), people.map((p) => p.name), people.map(() => 'bench')],
  );
  await db.query(
    `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical)
     SELECT p, k, v, v FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(p, k, v)`,
    [
      [...people.map((p) => p.id), ...people.map((p) => p.id)],
      [...people.map(() => 'email'), ...people.map(() => 'phone')],
      [...people.map((p) => p.email), ...people.map((p) => p.phone)],
    ],
  );
  const seenThreads = new Set<string>();
  for (const batch of corpus.batches(2000)) {
    const rows = batch.map((d) => ({
      ...d,
      ts: new Date(d.ts).toISOString(),
      people: JSON.stringify([
        { identifier: d.sender.email, identifier_type: 'email', role: 'sender', display_name: d.sender.name },
        { identifier: d.to.phone, identifier_type: 'phone', role: 'recipient', display_name: d.to.name },
      ]),
      sender: d.sender.id,
      to: d.to.id,
    }));
    const newThreads = [...new Set(rows.flatMap((r) => (r.thread && !seenThreads.has(r.thread) ? [r.thread] : [])))];
    for (const t of newThreads) seenThreads.add(t);
    await db.query(
      `INSERT INTO threads (thread_id, external_id, source_type) SELECT t, t::text, 'chatapp' FROM unnest($1::uuid[]) t
       ON CONFLICT DO NOTHING`,
      [newThreads],
    );
    await db.query(
      `INSERT INTO documents (doc_id, external_id, source_type, title, text, text_sha256, content_timestamp,
         content_timestamp_type, people, thread_id, has_attachments, attachment_count, status)
       SELECT u.id, u.id::text, u.src, u.title, u.txt, md5(u.txt), u.ts, 'sent', u.ppl, u.th, u.att, u.att::int, 'indexed'
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::jsonb[], $7::uuid[], $8::boolean[])
              AS u(id, src, title, txt, ts, ppl, th, att)`,
      [rows.map((r) => r.id), rows.map((r) => r.source), rows.map((r) => r.title), rows.map((r) => r.text),
       rows.map((r) => r.ts), rows.map((r) => r.people), rows.map((r) => r.thread), rows.map((r) => r.att)],
    );
    await db.query(
      `INSERT INTO chunks (chunk_id, text, text_sha256, embedding_status)
       SELECT c, t, encode(sha256(convert_to(t, 'UTF8')), 'hex') || c::text, 'embedded'
         FROM unnest($1::uuid[], $2::text[]) AS u(c, t)`,
      [rows.map((r) => r.chunk), rows.map((r) => r.text)],
    );
    await db.query(
      `INSERT INTO chunk_documents (doc_id, ordinal, chunk_id, start_char, end_char)
       SELECT d, 0, c, 0, length(t) FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(d, c, t)`,
      [rows.map((r) => r.id), rows.map((r) => r.chunk), rows.map((r) => r.text)],
    );
    await db.query(
      `INSERT INTO document_people (doc_id, person_id, role)
       SELECT d, p, r FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(d, p, r) ON CONFLICT DO NOTHING`,
      [[...rows.map((r) => r.id), ...rows.map((r) => r.id)], [...rows.map((r) => r.sender), ...rows.map((r) => r.to)],
       [...rows.map(() => 'sender'), ...rows.map(() => 'recipient')]],
    );
  }
}
