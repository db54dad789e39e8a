/**
 * Generates a realistic Messages chat.db for the chat collector benchmark.
 *
 *   node --import tsx bench/chat/generate.ts [--messages 200000] [--out /tmp/memex-bench-chat/chat.db]
 *        [--profile ventura|high_sierra|legacy] [--seed 42] [--measure-core]
 *
 * Mix (deterministic for a seed): ~400 handles (70% phones, 30% emails), ~220 chats (80% direct, 20%
 * groups of 3-8), messages in time order over three years, 40% sent by me, 25% with text only in
 * attributedBody (Ventura-style), emoji and non-Latin text, 4% with attachments, 2% tapbacks on recent
 * messages, 0.5% edited later, 0.3% empty (unsent) rows.
 *
 * --measure-core also runs the collector core (read + decode + build documents) over the file into an
 * in-memory sink and prints rows/s and peak RSS; the end-to-end figure (into a running gateway) needs
 * the host agent daemon and is measured separately.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChatDbBuilder, type ChatSchemaProfile } from '../../test/helpers/chatdb-builder.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200000' },
    out: { type: 'string', default: path.join(os.tmpdir(), 'memex-bench-chat', 'chat.db') },
    profile: { type: 'string', default: 'ventura' },
    seed: { type: 'string', default: '42' },
    'measure-core': { type: 'boolean', default: false },
    'batch-size': { type: 'string', default: '200' },
  },
});

const N = Number(values.messages);
const profile = values.profile as ChatSchemaProfile;
if (!Number.isInteger(N) || N < 1) throw new Error('--messages must be a positive integer');
if (!['ventura', 'high_sierra', 'legacy'].includes(profile)) throw new Error('--profile must be ventura, high_sierra or legacy');

/** mulberry32: small deterministic PRNG so runs are comparable. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(Number(values.seed));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];

const WORDS = ('the a to and you I it for on is that we are at this with have be can just get so what ' +
  'lunch dinner tomorrow tonight meeting train late home work call later thanks sure okay weekend trip ' +
  'photos invoice kids school doctor flight hotel car park coffee beer pizza birthday gift plan running ' +
  'soon minutes morning evening office project report deadline budget review draft send check').split(' ');
const EXTRAS = ['😂', '👍', '❤️', '🎉', '🙏', '😅', '🚗', '☕️', '👋🏽', '🇫🇷', 'Привет, как дела?', '明天见', 'ありがとう',
  'مرحبا', 'שלום', 'Grüße aus München', 'ça va ?', 'Ok 👌'];

function sentence(): string {
  const n = 2 + Math.floor(rnd() * 18);
  const w: string[] = [];
  for (let i = 0; i < n; i++) w.push(pick(WORDS));
  let s = w.join(' ');
  s = s[0].toUpperCase() + s.slice(1) + pick(['.', '!', '?', '', '...']);
  if (rnd() < 0.3) s += ' ' + pick(EXTRAS);
  if (rnd() < 0.03) s += ' ' + Array.from({ length: 40 }, () => pick(WORDS)).join(' '); // occasional long message
  return s;
}

fs.mkdirSync(path.dirname(values.out!), { recursive: true });
const t0 = performance.now();
const b = ChatDbBuilder.create(values.out!, profile);
const stats = { handles: 0, chats: 0, messages: 0, bodyOnly: 0, attachments: 0, tapbacks: 0, edits: 0, empty: 0 };

b.db.exec('BEGIN');
const handles: { id: number; ident: string }[] = [];
for (let i = 0; i < 400; i++) {
  const ident = rnd() < 0.7
    ? `+1${String(2000000000 + Math.floor(rnd() * 7999999999)).slice(0, 10)}`
    : `${pick(['alex', 'sam', 'jo', 'max', 'lee', 'kim', 'ana', 'ivan', 'mei', 'omar'])}.${i}@${pick(['icloud.com', 'gmail.com', 'example.org'])}`;
  handles.push({ id: b.addHandle(ident, ident.includes('@') ? 'iMessage' : pick(['iMessage', 'SMS'])), ident });
}
stats.handles = handles.length;
const chats: { id: number; members: number[] }[] = [];
for (let i = 0; i < 220; i++) {
  if (i < 176) {
    const h = handles[i % handles.length];
    chats.push({ id: b.addChat({ chatIdentifier: h.ident, handles: [h.id] }), members: [h.id] });
  } else {
    const size = 3 + Math.floor(rnd() * 6);
    const members = [...new Set(Array.from({ length: size }, () => pick(handles).id))];
    const id = b.addChat({
      chatIdentifier: `chat${Math.floor(rnd() * 1e15)}`,
      displayName: rnd() < 0.7 ? pick(['Family', 'Weekend trip', 'Book club', 'Team', 'Flatmates', 'Football', 'Project X']) : null,
      handles: members,
      group: true,
    });
    chats.push({ id, members });
  }
}
stats.chats = chats.length;

const start = Date.now() - 3 * 365 * 86_400_000;
const step = (3 * 365 * 86_400_000) / N;
const recent: { rowId: number; guid: string; chat: number; parts: number }[] = [];
const toEdit: number[] = [];
// Conversations come in bursts: stay in a chat for a while.
let chat = pick(chats);
for (let i = 0; i < N; i++) {
  if (rnd() < 0.15) chat = rnd() < 0.8 ? chats[Math.floor(Math.pow(rnd(), 2) * chats.length)] : pick(chats);
  const date = new Date(start + i * step + rnd() * step);
  const fromMe = rnd() < 0.4;
  const handleId = fromMe ? (chat.members.length === 1 ? chat.members[0] : 0) : pick(chat.members);
  const r = rnd();
  if (r < 0.02 && recent.length > 0 && profile !== 'legacy') {
    const target = recent[recent.length - 1 - Math.floor(rnd() * Math.min(recent.length, 20))];
    const type = (rnd() < 0.1 ? 3000 : 2000) + Math.floor(rnd() * 6);
    b.addMessage({ chatId: target.chat, handleId, isFromMe: fromMe, text: 'Loved “…”', date,
      associatedMessageGuid: `p:0/${target.guid}`, associatedMessageType: type });
    stats.tapbacks++;
  } else if (r < 0.023) {
    b.addMessage({ chatId: chat.id, handleId, isFromMe: fromMe, text: null, date });
    stats.empty++;
  } else {
    const attach = rnd() < 0.04;
    const bodyOnly = profile !== 'legacy' && rnd() < 0.25;
    const text = sentence();
    const ext = pick(['jpeg', 'HEIC', 'png', 'pdf', 'mov']);
    const m = b.addMessage({
      chatId: chat.id,
      handleId,
      isFromMe: fromMe,
      ...(bodyOnly ? { bodyOnly: text } : { text: attach && rnd() < 0.5 ? '\ufffc' : text }),
      date,
      dateRead: fromMe ? null : new Date(date.getTime() + 60_000),
      dateDelivered: fromMe ? new Date(date.getTime() + 2_000) : null,
      attachments: attach
        ? [{
            filename: `~/Library/Messages/Attachments/${(i % 256).toString(16).padStart(2, '0')}/${i % 100}/IMG_${i}.${ext}`,
            mimeType: ext === 'pdf' ? 'application/pdf' : ext === 'mov' ? 'video/quicktime' : `image/${ext.toLowerCase() === 'jpeg' ? 'jpeg' : ext.toLowerCase()}`,
            totalBytes: 20_000 + Math.floor(rnd() * 5_000_000),
          }]
        : [],
    });
    if (bodyOnly) stats.bodyOnly++;
    if (attach) stats.attachments++;
    recent.push({ rowId: m.rowId, guid: m.guid, chat: chat.id, parts: attach ? 2 : 1 });
    if (recent.length > 200) recent.shift();
    if (profile === 'ventura' && fromMe && rnd() < 0.0125) toEdit.push(m.rowId);
  }
  stats.messages++;
  if (i % 20_000 === 19_999) {
    b.db.exec('COMMIT');
    b.db.exec('BEGIN');
  }
}
for (const rowId of toEdit) {
  b.editMessage(rowId, `${sentence()} (edited)`, new Date());
  stats.edits++;
}
b.db.exec('COMMIT');
b.db.pragma('wal_checkpoint(TRUNCATE)');
b.close();
const genMs = performance.now() - t0;
const size = fs.statSync(values.out!).size;

console.log(`chat.db generated: ${values.out}`);
console.log(`  profile=${profile} seed=${values.seed}`);
console.log(`  messages=${stats.messages} handles=${stats.handles} chats=${stats.chats} body_only=${stats.bodyOnly} ` +
  `attachments=${stats.attachments} tapbacks=${stats.tapbacks} edits=${stats.edits} empty=${stats.empty}`);
console.log(`  file=${(size / 1048576).toFixed(1)} MiB  generation=${(genMs / 1000).toFixed(2)} s  ` +
  `(${Math.round(stats.messages / (genMs / 1000))} messages/s)`);

if (values['measure-core']) {
  const { runChatCollector } = await import('../../src/agent/collectors/chatapp/cursor.ts');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-chat-core-'));
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
  let docs = 0;
  let bytes = 0;
  const t1 = performance.now();
  const s = await runChatCollector({
    dbPath: values.out!,
    statePath: path.join(dir, 'state.json'),
    mode: 'backfill',
    batch: true,
    batchSize: Number(values['batch-size']),
    // The sink serialises each document like the gateway client would, then accepts it.
    submit: async (d) => {
      const arr = Array.isArray(d) ? d : [d];
      docs += arr.length;
      bytes += JSON.stringify({ documents: arr }).length;
      peak = Math.max(peak, process.memoryUsage().rss);
      return arr.map(() => ({ ok: true }));
    },
  });
  const ms = performance.now() - t1;
  clearInterval(timer);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`collector core (read + decode + build + JSON, no gateway), batch_size=${values['batch-size']}:`);
  console.log(`  status=${s.status} rows=${s.processed} documents=${docs} skipped=${s.skipped} reactions=${s.reactions} ` +
    `attachments=${s.attachments} payload=${(bytes / 1048576).toFixed(1)} MiB`);
  console.log(`  ${(ms / 1000).toFixed(2)} s  ${Math.round(s.processed / (ms / 1000))} rows/s  peak RSS ${(peak / 1048576).toFixed(0)} MiB`);
}
