/**
 * Realistic generated personal data for benchmarks: messages and emails between a fixed cast of
 * people, in threads, with lengths from a sentence to a few paragraphs. Seeded, so runs compare.
 */
const WORDS = (
  'meeting lunch tomorrow project budget invoice flight hotel dinner weekend report draft review call ' +
  'schedule deadline client contract payment receipt doctor appointment school pickup birthday party gift ' +
  'train ticket conference slides notes summary question answer update status plan launch design feedback ' +
  'garden kitchen repair plumber insurance renewal car service bank transfer rent landlord lease apartment ' +
  'holiday beach mountain hiking photos camera recipe groceries pharmacy prescription gym training coach ' +
  'quarterly hiring interview candidate offer salary team onboarding laptop password account security ' +
  'concert tickets movie theatre museum exhibition library book chapter deadline editor publisher'
).split(' ');
const NAMES = ['Ann Lee', 'Bob Stone', 'Carla Diaz', 'Dev Patel', 'Eve Martin', 'Farid Haddad', 'Gina Rossi',
  'Hugo Weber', 'Iris Chen', 'Jonas Berg', 'Kemi Ade', 'Luis Ortega'];

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Person {
  name: string;
  email: string;
  phone: string;
}

export const PEOPLE: Person[] = NAMES.map((name, i) => ({
  name,
  email: `${name.split(' ')[0].toLowerCase()}@example.com`,
  phone: `+1 (617) 555-${String(1000 + i * 37).slice(0, 4)}`,
}));

export function sentence(r: () => number, min = 6, max = 16): string {
  const n = min + Math.floor(r() * (max - min));
  const words = Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  return `${words.join(' ')}.`;
}

export function textOfLength(r: () => number, minChars: number, maxChars: number): string {
  const target = minChars + Math.floor(r() * (maxChars - minChars));
  let out = '';
  while (out.length < target) out += (out ? ' ' : '') + sentence(r);
  return out;
}

/** A v1 ingest body: an email or chat message with 2–5 people in one of `threads` threads. */
export function message(r: () => number, i: number, threads = 2000): Record<string, unknown> {
  const isEmail = r() < 0.5;
  const count = 2 + Math.floor(r() * 4);
  const cast = [...PEOPLE].sort(() => r() - 0.5).slice(0, count);
  const thread = Math.floor(r() * threads);
  const hasAttachment = r() < 0.15;
  const day = Math.floor(r() * 365);
  return {
    source_type: isEmail ? 'email' : 'chatapp',
    source_id: `${isEmail ? 'email' : 'chat'}:${i}`,
    title: isEmail ? sentence(r, 3, 7).slice(0, -1) : cast[1].name,
    content: { mime_type: 'text/plain', data: textOfLength(r, 200, 2000) },
    content_timestamp: new Date(Date.UTC(2026, 0, 1) + day * 86400_000 + Math.floor(r() * 86400_000)).toISOString(),
    people: cast.map((p, k) => ({
      identifier: isEmail ? p.email : p.phone,
      identifier_type: isEmail ? 'email' : 'phone',
      role: k === 0 ? 'sender' : 'recipient',
      display_name: p.name,
    })),
    thread: { external_id: `thread-${isEmail ? 'e' : 'c'}-${thread}`, title: `Thread ${thread}`, is_group: count > 2 },
    metadata: hasAttachment
      ? { attachments: [{ index: 0, kind: 'image', role: 'attachment', mime_type: 'image/jpeg', size_bytes: 48213 }] }
      : { folder: isEmail ? 'INBOX' : undefined },
  };
}
