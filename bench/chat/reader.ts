/**
 * The Messages reader alone on a large chat.db: every message read in cursor batches, as a backfill reads them.
 *
 *   node --import tsx bench/chat/reader.ts --db /tmp/memex-bench-chat/chat.db [--batch 200] [--rows N]
 *        [--chatdb PATH]   (another module exporting ChatDb, e.g. an older reader, for an A/B run)
 *
 * Make the file with bench/chat/generate.ts (--messages 1650000 gives about 1 GB). Prints the time to open, rows/s
 * for messagesAfter (message + handle + chat + attachments), the chats lookup, peak RSS, and, as the native peer,
 * the same message query through the sqlite3 command-line shell when it is installed (read-only, output discarded).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    db: { type: 'string', default: path.join(os.tmpdir(), 'memex-bench-chat', 'chat.db') },
    batch: { type: 'string', default: '200' },
    rows: { type: 'string' },
    chatdb: { type: 'string', default: path.resolve(import.meta.dirname, '../../src/agent/collectors/chatapp/chatdb.ts') },
  },
});
const file = path.resolve(values.db!);
const batch = Number(values.batch);
const maxRows = values.rows ? Number(values.rows) : Number.MAX_SAFE_INTEGER;
if (!fs.existsSync(file)) throw new Error(`${file} does not exist: make it with bench/chat/generate.ts`);

type Reader = {
  open(p: string): {
    messagesAfter(cursor: number, limit: number): { rowId: number; chatId: number | null }[];
    chats(ids: Iterable<number>): Map<number, unknown>;
    headRowId(): number;
    close(): void;
  };
};
const { ChatDb } = (await import(path.resolve(values.chatdb!))) as { ChatDb: Reader };

let peakRss = 0;
const sample = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
const t0 = performance.now();
const db = ChatDb.open(file);
const head = db.headRowId();
const opened = performance.now() - t0;
let cursor = 0;
let rows = 0;
let chatLookups = 0;
const t1 = performance.now();
while (rows < maxRows) {
  const got = db.messagesAfter(cursor, Math.min(batch, maxRows - rows));
  if (got.length === 0) break;
  rows += got.length;
  cursor = got[got.length - 1].rowId;
  chatLookups += db.chats(got.map((m) => m.chatId).filter((c): c is number => c !== null)).size;
}
const readMs = performance.now() - t1;
db.close();
clearInterval(sample);
peakRss = Math.max(peakRss, process.memoryUsage().rss);

// The engine alone: one message query (message + handle + chat id) over every row, through the WebAssembly SQLite
// in cursor pages of 10,000, and through the native sqlite3 shell (output discarded).
const MESSAGE_SQL = `SELECT m.ROWID AS r, m.guid, m.text, m.attributedBody, m.date, h.id,
    (SELECT cmj.chat_id FROM chat_message_join cmj WHERE cmj.message_id = m.ROWID ORDER BY cmj.chat_id LIMIT 1) AS chat
  FROM message m LEFT JOIN handle h ON h.ROWID = m.handle_id`;
const { SqliteSnapshot } = await import('../../src/sqlite/engine.ts');
const snap = SqliteSnapshot.open(file);
const t2 = performance.now();
let engineRows = 0;
for (let after = 0; engineRows < maxRows; ) {
  const page = snap.read((c) => c.all<{ r: number }>(`${MESSAGE_SQL} WHERE m.ROWID > ? ORDER BY m.ROWID LIMIT 10000`, after));
  if (page.length === 0) break;
  engineRows += page.length;
  after = page[page.length - 1].r;
}
const engineMs = performance.now() - t2;
snap.close();

let native = 'sqlite3 shell not installed';
const probe = spawnSync('sqlite3', ['-version'], { encoding: 'utf8' });
if (probe.status === 0) {
  const sql = `${MESSAGE_SQL} ORDER BY m.ROWID${Number.isFinite(maxRows) && maxRows < Number.MAX_SAFE_INTEGER ? ` LIMIT ${maxRows}` : ''};`;
  const t = performance.now();
  const r = spawnSync('sqlite3', ['-readonly', file], { input: sql, stdio: ['pipe', 'ignore', 'pipe'], maxBuffer: 1 << 30 });
  native = r.status === 0 ? `${((performance.now() - t) / 1000).toFixed(1)} s for the message query (sqlite3 ${probe.stdout.trim().split(' ')[0]})` : `failed: ${r.stderr}`;
}

console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`reader: ${path.relative(process.cwd(), values.chatdb!)}`);
console.log(`file: ${file} (${(fs.statSync(file).size / 2 ** 20).toFixed(0)} MiB), head ROWID ${head}`);
console.log(`open: ${opened.toFixed(0)} ms`);
console.log(`messagesAfter + chats, batches of ${batch}: ${rows} rows in ${(readMs / 1000).toFixed(1)} s = ${Math.round(rows / (readMs / 1000))} rows/s (${chatLookups} chat lookups)`);
console.log(`peak RSS: ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
console.log(`engine, the message query in pages of 10,000: ${engineRows} rows in ${(engineMs / 1000).toFixed(1)} s (WebAssembly); native peer: ${native}`);
