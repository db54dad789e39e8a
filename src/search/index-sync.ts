/**
 * Keeps the in-memory lexical index (index/lexical-index.ts) equal to the catalog.
 *
 * - Build: every active document with its chunks' stored tsvectors, read in pages by doc_id (and the
 *   text of a chunk or title holding an `_`, for the whole terms of identifiers: whole-terms.ts).
 * - Follow: the change log `search_changes` (migration 060), filled by triggers on documents,
 *   chunk_documents and document_people in the writing transaction, so writes from any process
 *   (another gateway, the CLI) are seen. A poll reads rows with `xid >= horizon`, where horizon is
 *   the xmin of the previous poll's snapshot: every transaction that was not visible then has an
 *   xid at or above it, so a late commit is never skipped. Rows already applied are recognised by
 *   seq. Applying a change reloads the document's current state (idempotent).
 * - Every search asks for `current()` before scoring: a poll whose statement is sent after the
 *   call, so a write committed before the search arrived is always seen. Concurrent searches share
 *   polls: one waits for the poll in flight only if it was sent after the search arrived, else for
 *   the next one, which every search arriving meanwhile joins (under load, a poll serves several
 *   searches). Results are absorbed one at a time: the horizon only moves forward, seqs already
 *   applied are skipped, and an older result that repeats a change just reloads that document.
 * - Rows also name people whose display name changed (migration 070); with the documents changed,
 *   they go to `onChange`, which drops cached rows (row-cache.ts) in step with the index.
 * - A timer polls in the background so an idle process stays current, prunes log rows older than
 *   the retention, and rebuilds when the index has more dead passages than live ones, when a poll
 *   brings more changes than a rebuild would read, or when this process has not polled for longer
 *   than the retention.
 * - Snapshot (index-snapshot.ts), when a file is given: the first build loads it instead of reading
 *   every document, then catches up from the log since the position it reflects (horizon and the
 *   rows applied above it). It is not used, and the index is built from the catalog, when it fails
 *   its checks, belongs to another database or schema, is older than what the log still holds
 *   (prunes record how far they went: system_settings `search_changes_pruned_below`), or when the
 *   caught-up index does not count the catalog's active documents. It is written in the background
 *   after a build from the catalog, after `everyChanges` documents changed or `everyMs` with any
 *   change, and at close.
 */
import type { Database, Queryable } from '../db/types.ts';
import { serverInstanceId } from '../db/instance.ts';
import { IndexSnapshotFile, type SnapshotIdentity } from './index-snapshot.ts';
import { LexicalIndex, type Bm25Params, type IndexedDocument } from './index/lexical-index.ts';
import { parseTsvector } from './tsvector.ts';
import { mayHoldWhole, wholeTerms } from './whole-terms.ts';
import { TAG_IDENT, tagIdentifiers } from '../schemas/tag-names.ts';

export interface IndexSyncOptions {
  /** Background poll interval; 0 disables the timer (polls still run before every query). */
  pollIntervalMs: number;
  /** Change-log rows are kept this long; a process that has not polled for half of it rebuilds. */
  retentionMs?: number;
  /** Documents per page when building. */
  pageSize?: number;
  onError?: (err: unknown) => void;
  /** Called as changes are applied, before any search sees the index reflecting them. */
  onChange?: (change: IndexChange) => void;
  /** Where the index is kept between starts (DATA_DIR/search-index.snapshot); none when absent. */
  snapshot?: {
    file: string;
    /** Documents changed since the last write that make a new one. */
    everyChanges: number;
    /** Time since the last write after which any change makes a new one. */
    everyMs: number;
    /** What happened to the snapshot (for the log and `memex serve`'s lines). */
    onEvent?: (event: SnapshotEvent) => void;
    /**
     * Nobody is waiting for an answer (`memex serve`: the reader signal, src/db/readers.ts). Taking
     * a snapshot copies the whole index on this thread (~450 ms at 100k documents), and a search
     * arriving then waits for it: a due background write waits for a quiet moment, at most
     * `maxDeferMs` (then it is written anyway, so a store searched all day still gets one).
     * Absent: always quiet. Writes at close are never deferred.
     */
    quiet?: () => boolean;
    /** How long a due write may wait for a quiet moment (default SNAPSHOT_MAX_DEFER_MS). */
    maxDeferMs?: number;
  };
}

/** How long a due background snapshot waits for nobody to be searching before it is written anyway. */
export const SNAPSHOT_MAX_DEFER_MS = 10 * 60_000;

export type SnapshotEvent =
  | { kind: 'loaded'; documents: number; bytes: number; caughtUp: number; ms: number }
  | { kind: 'rejected'; reason: string }
  | { kind: 'written'; documents: number; bytes: number; ms: number }
  | { kind: 'write_failed'; error: string };

/** system_settings key: change-log rows of transactions below this xid may have been deleted. */
export const PRUNED_KEY = 'search_changes_pruned_below';

/** What changed in the catalog: documents and people's names, or everything (the index was rebuilt). */
export type IndexChange = { all: true } | { all: false; docIds: string[]; personIds: string[] };

interface DocRow {
  doc_id: string;
  source_type: string;
  has_attachments: boolean;
  ts: number;
  thread_id: string | null;
  title: string | null;
  persons: string[] | null;
  idents: string[] | null;
  /** `s:` / `r:` + person id or identifier as written: who is the sender, who a recipient. */
  roles: string[] | null;
  /** The tsvector of the people's email addresses (text output), null when none. */
  addrs: string | null;
  /** The title as written when it may hold whole terms (whole-terms.ts), else null. */
  title_text: string | null;
  /** [chunk id, tsvector as text, the text when it may hold whole terms]. */
  passages: [string, string | null, string | null][] | null;
}

/** A document's mailing list id: the collector's `metadata.list.id`, else the List-Id header's `<id>`, lower-cased. */
const LIST_ID_SQL = `nullif(lower(coalesce(d.metadata->'list'->>'id', substring(d.metadata->>'list_id' from '<([^<>[:space:]]+)>'),
                                     nullif(btrim(d.metadata->>'list_id'), ''))), '')`;

const DOC_SELECT = `
  SELECT d.doc_id, d.source_type, d.has_attachments,
         (extract(epoch FROM d.content_timestamp) * 1000000)::float8 AS ts,
         d.thread_id, d.title_tsv::text AS title,
         -- The text too where it may hold identifiers joined by underscores (whole terms, whole-terms.ts).
         CASE WHEN ${mayHoldWhole('d.title')} THEN d.title END AS title_text,
         (SELECT array_agg(DISTINCT dp.person_id::text) FROM document_people dp WHERE dp.doc_id = d.doc_id) AS persons,
         (SELECT array_agg(DISTINCT v) FROM (
            SELECT lower(pe->>'identifier') AS v
              FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
             WHERE pe->>'identifier' IS NOT NULL
            -- The mailing list the message came through (list:, issue 40): its List-Id and the id's name part.
            UNION ALL SELECT 'list:' || l.id FROM (SELECT ${LIST_ID_SQL} AS id) l WHERE l.id IS NOT NULL
            UNION ALL SELECT 'list:' || split_part(l.id, '.', 1) FROM (SELECT ${LIST_ID_SQL} AS id) l WHERE l.id IS NOT NULL
            -- Its tags and its conversation's (tag:, issue 44); toIndexed adds the levels above each (tag:NAME/*).
            UNION ALL SELECT 'tag:' || t.tag FROM document_tags t WHERE t.doc_id = d.doc_id
            UNION ALL SELECT 'tag:' || t.tag FROM thread_tags t WHERE t.thread_id = d.thread_id) i) AS idents,
         -- The addresses of every sender and recipient (From/To/Cc/Bcc) as words of the message, as notmuch
         -- indexes them: a bare address finds the mail it is on, not only the mail whose text holds it.
         (SELECT to_tsvector('english', string_agg(DISTINCT lower(pe->>'identifier'), ' '))::text
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
           WHERE strpos(pe->>'identifier', '@') > 1 AND length(pe->>'identifier') <= 320) AS addrs,
         (SELECT array_agg(DISTINCT k) FROM (
            SELECT CASE dp.role WHEN 'sender' THEN 's:' ELSE 'r:' END || dp.person_id::text AS k
              FROM document_people dp WHERE dp.doc_id = d.doc_id AND dp.role IN ('sender', 'recipient')
            UNION ALL
            SELECT CASE pe->>'role' WHEN 'sender' THEN 's:' ELSE 'r:' END || lower(pe->>'identifier')
              FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
             WHERE pe->>'identifier' IS NOT NULL AND pe->>'role' IN ('sender', 'recipient')) r) AS roles,
         (SELECT json_agg(json_build_array(cd.chunk_id, c.tsv::text, CASE WHEN ${mayHoldWhole('c.text')} THEN c.text END) ORDER BY cd.ordinal)
            FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id WHERE cd.doc_id = d.doc_id) AS passages
    FROM documents d`;

/**
 * Passages read into index form between two turns of the event loop (issue 47: loading one 5 M-character document,
 * ~4,000 passages, held the server's thread for seconds, and every request that arrived waited). A turn lets other
 * requests run; searches still wait for the poll they joined, so they see the document when it is complete.
 */
const PASSAGES_PER_TURN = 500;

/** Documents whose tags are read per statement when only their tags changed (applyTags). */
const TAGS_PER_READ = 10_000;

class Turns {
  private since = 0;
  /** Counts one passage; a promise of the next turn once PASSAGES_PER_TURN were counted, else undefined. */
  passage(): Promise<void> | undefined {
    if (++this.since < PASSAGES_PER_TURN) return undefined;
    this.since = 0;
    return new Promise((resolve) => setImmediate(resolve));
  }
}

/** The identifiers with, for each tag, the levels it is under (`tagtree:`, tag-names.ts). */
function withTagLevels(idents: string[]): string[] {
  const tags = idents.filter((v) => v.startsWith(TAG_IDENT)).map((v) => v.slice(TAG_IDENT.length));
  return tags.length === 0 ? idents : [...new Set([...idents, ...tagIdentifiers(tags)])];
}

async function toIndexed(r: DocRow, turns: Turns): Promise<IndexedDocument> {
  const titlePositions = new Map<string, number[]>();
  const roles = r.roles ?? [];
  const passages: IndexedDocument['passages'] = [];
  for (const [chunkId, tsv, text] of r.passages ?? []) {
    const positions = new Map<string, number[]>();
    const wholes = wholeTerms(text);
    passages.push({ chunkId, terms: parseTsvector(tsv, positions), positions, ...(wholes.size > 0 ? { wholes } : {}) });
    const turn = turns.passage();
    if (turn) await turn;
  }
  return {
    docId: r.doc_id,
    sourceType: r.source_type,
    hasAttachments: r.has_attachments,
    tsMicros: r.ts,
    threadId: r.thread_id,
    personIds: r.persons ?? [],
    identifiers: withTagLevels(r.idents ?? []),
    senders: roles.filter((k) => k.startsWith('s:')).map((k) => k.slice(2)),
    recipients: roles.filter((k) => k.startsWith('r:')).map((k) => k.slice(2)),
    title: parseTsvector(r.title, titlePositions),
    ...(r.addrs ? { addresses: parseTsvector(r.addrs) } : {}),
    ...(r.title_text ? { titleWholes: wholeTerms(r.title_text) } : {}),
    titlePositions,
    passages,
  };
}

export interface PollResult {
  /** pg_snapshot_xmin of the statement's snapshot, as text. */
  sync_h: string;
  /**
   * [seq, xid, doc_id, person_id, tags_only] of log rows at or above the horizon the statement was given;
   * tags_only: only the document's tags changed (migration 270).
   */
  sync_changes: [number, string, string | null, string | null, boolean][];
}

export class IndexSync {
  private index: LexicalIndex | null = null;
  private horizon: bigint = 0n;
  /** seq -> xid of log rows applied whose xid is still at or above the horizon (they come back). */
  private applied = new Map<number, bigint>();
  private lastPollAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  /** The poll whose statement may already be on its way, and the one searches arriving meanwhile share. */
  private inflight: Promise<LexicalIndex> | null = null;
  private next: Promise<LexicalIndex> | null = null;
  private closed = false;
  /** (time, horizon) samples: log rows below a horizon older than the retention can go. */
  private readonly horizons: { at: number; horizon: bigint }[] = [];
  private readonly retentionMs: number;
  private readonly pageSize: number;
  /** Builds, polls absorbed, documents reloaded and documents whose tags alone were read again, for tests and benchmarks. */
  readonly counters = { builds: 0, polls: 0, applied: 0, tagsApplied: 0 };
  /** Documents read by the build in progress, of those counted when it started (readiness). */
  private building: { done: number; total: number } | null = null;
  private readonly snapshotFile: IndexSnapshotFile | null;
  /** The database's identity (read with the first build), written into snapshots. */
  private identity: SnapshotIdentity | null = null;
  private snapshotTried = false;
  /** The index was read from its snapshot and is being caught up (not ready yet). */
  private catchingUp = false;
  /** Documents applied since this process started (reloads, counted once per poll). */
  private changes = 0;
  /** `changes` when the index last matched the snapshot on disk; -1: it does not match any. */
  private savedAt = -1;
  /** Bumped by every build from the catalog (a write taken before one does not match after it). */
  private builds = 0;
  /** Bumped by every forget (discardSnapshot): a write taken before one is deleted, not kept. */
  private discards = 0;
  /** No write until a poll sent after the last forget has been applied. */
  private blocked = false;
  private lastSavedAt = Date.now();
  private saving: Promise<void> | null = null;
  /** Snapshot loads, writes and rejections, for tests and benchmarks. */
  readonly snapshotCounters = { loaded: 0, written: 0, rejected: 0, deferred: 0 };
  /** When a background write became due and started waiting for a quiet moment (null: none waits). */
  private dueSince: number | null = null;

  constructor(
    private readonly db: Database,
    private readonly params: Bm25Params,
    private readonly opts: IndexSyncOptions,
  ) {
    this.retentionMs = opts.retentionMs ?? 3_600_000;
    this.pageSize = opts.pageSize ?? 2000;
    this.snapshotFile = opts.snapshot ? new IndexSnapshotFile(opts.snapshot.file) : null;
  }

  /**
   * Whether searches are answered from a complete index (one was built), and how far the build in
   * progress is (GET /v1/readyz). A rebuild later on keeps `ready`: the old index serves until then.
   */
  get state(): { ready: boolean; building: boolean; done: number; total: number; documents: number } {
    const b = this.building;
    return { ready: this.index !== null && !this.catchingUp, building: b !== null, done: b?.done ?? 0, total: b?.total ?? 0, documents: this.index?.size.documents ?? 0 };
  }

  /** The change-log read from the current horizon. */
  private poll(): Promise<{ rows: PollResult[] }> {
    return this.db.query<PollResult>(
      `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS sync_h,
         coalesce((SELECT json_agg(json_build_array(seq, xid::text, doc_id, person_id, tags_only))
                     FROM search_changes WHERE xid >= $1::xid8), '[]') AS sync_changes`,
      [this.horizon.toString()],
      { name: 'memex_search_poll' },
    );
  }

  /** The index, built if needed (first use, or this process stopped polling for too long). */
  async ready(): Promise<LexicalIndex> {
    if (this.closed) throw new Error('search index is closed');
    if (!this.index || this.isStale()) await this.serial(() => (this.index && !this.isStale() ? undefined : this.build()));
    this.startTimer();
    return this.index!;
  }

  /**
   * The index, current as of the moment of the call: it reflects every write committed before, by
   * any process. Score against this one, not the one `ready()` gave, which a rebuild may have
   * replaced since.
   */
  current(): Promise<LexicalIndex> {
    if (!this.inflight) return this.startPoll();
    // The poll in flight may have read the log before this call: wait for the next one.
    this.next ??= this.inflight
      .catch(() => undefined)
      .then(() => {
        this.next = null;
        return this.startPoll();
      });
    return this.next;
  }

  private startPoll(): Promise<LexicalIndex> {
    const p = (async () => {
      await this.ready();
      const r = await this.poll();
      return this.serial(async () => {
        await this.applyPoll(r.rows[0]);
        return this.index!;
      });
    })();
    this.inflight = p;
    const done = () => {
      if (this.inflight === p) this.inflight = null;
    };
    p.then(done, done);
    return p;
  }

  /** Discards the index and builds it again from the catalog. */
  async rebuild(): Promise<LexicalIndex> {
    await this.serial(() => this.build());
    return this.index!;
  }

  /** Stops the background poll; with a snapshot file, writes the index if it changed since the last one. */
  async close(): Promise<void> {
    if (this.closed) return this.saving ?? undefined;
    // The snapshot written below reflects the log up to now (not the last background poll): a
    // start then has nothing to catch up for what was written while this process ran.
    if (this.snapshotFile && this.index && !this.blocked) await this.current().catch(() => undefined);
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // After a forget whose deletes are not applied yet nothing is written: the next start rebuilds.
    // A write in flight may have been taken before the last changes: wait for it, then write again.
    while (this.saving) await this.saving;
    if (this.snapshotFile && this.index && this.unsaved() > 0 && !this.blocked) await this.saveSnapshot();
  }

  /**
   * Writes the snapshot now (in the background of the caller: searches and polls go on while it is
   * hashed and written); one write at a time, a request during one waits for it.
   */
  saveSnapshot(): Promise<void> {
    const file = this.snapshotFile;
    if (!file || !this.index) return Promise.resolve();
    if (this.saving) return this.saving;
    const started = performance.now();
    let again = false;
    const p = (async () => {
      // Serialised between two polls, so the position written is exactly the one the arrays reflect.
      const taken = await this.serial(async () => {
        this.identity ??= await readIdentity(this.db);
        const logSeq = await readLogSeq(this.db);
        return {
          data: this.index!.serialise(),
          position: { horizon: this.horizon, applied: new Map(this.applied), logSeq },
          at: this.changes,
          builds: this.builds,
          discards: this.discards,
          identity: this.identity,
        };
      });
      try {
        const bytes = await file.save(taken.data, taken.position, taken.identity);
        if (this.discards !== taken.discards) {
          // Taken before a forget: it may hold what was erased.
          file.remove();
          again = true;
          return;
        }
        if (this.builds === taken.builds) this.savedAt = taken.at;
        this.snapshotCounters.written++;
        this.opts.snapshot?.onEvent?.({ kind: 'written', documents: taken.data.meta.documents, bytes, ms: performance.now() - started });
      } catch (err) {
        this.opts.snapshot?.onEvent?.({ kind: 'write_failed', error: (err as Error).message });
      } finally {
        this.lastSavedAt = Date.now();
      }
    })();
    this.saving = p;
    const done = () => {
      if (this.saving === p) this.saving = null;
      if (again) this.maybeSaveSnapshot();
    };
    p.then(done, done);
    return p;
  }

  /** Deletes the snapshot and writes a new one soon (after a forget). */
  discardSnapshot(): void {
    if (!this.snapshotFile) return;
    const gen = ++this.discards;
    this.snapshotFile.remove();
    this.savedAt = -1;
    this.lastSavedAt = 0;
    // The next snapshot is taken once the forget's deletes are in the index: after a poll sent now.
    this.blocked = true;
    const unblock = () => {
      if (gen !== this.discards) return;
      this.blocked = false;
      this.maybeSaveSnapshot();
    };
    if (this.closed) return;
    this.current().then(unblock, unblock);
  }

  /** Documents changed since the index matched its snapshot on disk (Infinity: it matches none). */
  private unsaved(): number {
    return this.savedAt < 0 ? Infinity : this.changes - this.savedAt;
  }

  /**
   * A write when enough changed, or anything changed a while ago, once nobody is searching (after a
   * poll; never awaited). A write waiting for a quiet moment is looked at again after every poll.
   */
  private maybeSaveSnapshot(): void {
    const s = this.opts.snapshot;
    const unsaved = this.unsaved();
    if (!s || this.closed || this.saving || this.blocked || unsaved === 0) return;
    if (unsaved < s.everyChanges && Date.now() - this.lastSavedAt < s.everyMs) return;
    const now = Date.now();
    this.dueSince ??= now;
    const waitedEnough = now - this.dueSince >= (s.maxDeferMs ?? SNAPSHOT_MAX_DEFER_MS);
    if (s.quiet && !s.quiet() && !waitedEnough) {
      this.snapshotCounters.deferred++;
      return;
    }
    this.dueSince = null;
    void this.saveSnapshot();
  }

  /**
   * The index from the snapshot, caught up from the change log; false (and nothing changed) when
   * there is none or it cannot be trusted.
   */
  private async loadSnapshot(): Promise<boolean> {
    const file = this.snapshotFile!;
    const started = performance.now();
    const reject = (reason: string) => {
      this.snapshotCounters.rejected++;
      this.opts.snapshot?.onEvent?.({ kind: 'rejected', reason });
      return false;
    };
    this.identity ??= await readIdentity(this.db);
    const loaded = await file.load(this.params);
    if (!loaded.ok) return loaded.reason === 'no snapshot' ? false : reject(loaded.reason);
    const { header, position } = loaded;
    const id = this.identity;
    if (header.identity?.instance !== id.instance || header.identity.database !== id.database) return reject('made from another database');
    if (header.identity.migrations?.count !== id.migrations.count || header.identity.migrations.latest !== id.migrations.latest) {
      return reject(`made at schema ${header.identity.migrations?.latest}, the database is at ${id.migrations.latest}`);
    }
    const facts = await this.db.query<{ h: string; pruned: string | null }>(
      `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h,
              (SELECT value #>> '{}' FROM system_settings WHERE key = $1) AS pruned`,
      [PRUNED_KEY],
    );
    const { h, pruned } = facts.rows[0];
    if (BigInt(h) < position.horizon || BigInt(await readLogSeq(this.db)) < BigInt(position.logSeq)) {
      return reject('newer than the database (a restored or recreated database)');
    }
    if (pruned !== null && BigInt(pruned) > position.horizon) return reject('the change log was pruned past it');

    this.index = loaded.index;
    this.horizon = position.horizon;
    this.applied = position.applied;
    this.opts.onChange?.({ all: true });
    const before = this.counters.applied + this.counters.tagsApplied;
    this.savedAt = this.changes;
    const r = await this.poll();
    await this.applyPoll(r.rows[0], false);
    // The caught-up index must count what the catalog counts (a write between the two statements
    // can make them differ once: one more catch-up before giving up on the snapshot).
    for (let attempt = 0; ; attempt++) {
      const c = await this.db.query<{ total: number }>('SELECT count(*)::int AS total FROM documents WHERE is_active_version');
      if (c.rows[0].total === this.index.size.documents) break;
      if (attempt === 1) {
        const held = this.index.size.documents;
        this.index = null;
        this.applied = new Map();
        this.horizon = 0n;
        return reject(`does not match the database after the catch-up (${held} documents, the catalog has ${c.rows[0].total})`);
      }
      const again = await this.poll();
      await this.applyPoll(again.rows[0], false);
    }
    const caughtUp = this.counters.applied + this.counters.tagsApplied - before;
    this.lastSavedAt = Date.now();
    this.snapshotCounters.loaded++;
    this.opts.snapshot?.onEvent?.({ kind: 'loaded', documents: this.index.size.documents, bytes: loaded.bytes, caughtUp, ms: performance.now() - started });
    return true;
  }

  private isStale(): boolean {
    return this.lastPollAt > 0 && Date.now() - this.lastPollAt > this.retentionMs / 2;
  }

  /** Runs fn after every earlier serial task; a failure is reported to its caller only. */
  private serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private startTimer(): void {
    if (this.timer || this.opts.pollIntervalMs <= 0 || this.closed) return;
    this.timer = setInterval(() => {
      this.current()
        .then(() => this.prune())
        .catch((err) => {
          // A poll cut off by close() (the pool ends under it) is not worth reporting.
          if (!this.closed) this.opts.onError?.(err);
        });
    }, this.opts.pollIntervalMs);
    this.timer.unref();
  }

  private async build(): Promise<void> {
    if (this.snapshotFile && !this.snapshotTried && !this.index) {
      this.snapshotTried = true;
      this.building = { done: 0, total: 0 };
      this.catchingUp = true;
      try {
        if (await this.loadSnapshot()) return;
      } catch (err) {
        this.index = null;
        this.snapshotCounters.rejected++;
        this.opts.snapshot?.onEvent?.({ kind: 'rejected', reason: (err as Error).message });
      } finally {
        this.building = null;
        this.catchingUp = false;
      }
    }
    // The horizon is taken first: everything committed after it is replayed from the log, and
    // replaying a document the pages below already read is harmless.
    const h = await this.db.query<{ h: string; total: number }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h, (SELECT count(*) FROM documents WHERE is_active_version)::int AS total',
    );
    const index = new LexicalIndex(this.params);
    const progress = (this.building = { done: 0, total: Number(h.rows[0].total) });
    let after = '00000000-0000-0000-0000-000000000000';
    try {
      for (;;) {
        const r = await this.db.query<DocRow>(
          `${DOC_SELECT} WHERE d.is_active_version AND d.doc_id > $1::uuid ORDER BY d.doc_id LIMIT $2`,
          [after, this.pageSize],
        );
        const turns = new Turns();
        for (const row of r.rows) index.upsert(await toIndexed(row, turns));
        progress.done += r.rows.length;
        if (r.rows.length < this.pageSize) break;
        after = r.rows[r.rows.length - 1].doc_id;
      }
    } finally {
      this.building = null;
    }
    this.index = index;
    this.horizon = BigInt(h.rows[0].h);
    this.applied = new Map();
    this.counters.builds++;
    this.opts.onChange?.({ all: true });
    const r = await this.poll();
    await this.applyPoll(r.rows[0], false);
    this.builds++;
    this.savedAt = -1;
    this.maybeSaveSnapshot();
  }

  private async applyPoll(poll: PollResult, mayRebuild = true): Promise<void> {
    this.counters.polls++;
    const fresh = new Map<number, bigint>();
    const docs = new Set<string>();
    /** Documents with a change beyond their tags (reloaded whole); the others only get their tags again. */
    const whole = new Set<string>();
    const people = new Set<string>();
    for (const [seq, xid, docId, personId, tagsOnly] of poll.sync_changes) {
      if (this.applied.has(seq)) continue;
      fresh.set(seq, BigInt(xid));
      if (docId !== null) {
        docs.add(docId);
        if (!tagsOnly) whole.add(docId);
      }
      if (personId !== null) people.add(personId);
    }
    const docIds = [...docs];
    if (mayRebuild && whole.size > Math.max(5000, this.index!.size.documents)) {
      // More changes than a rebuild would read (a bulk load into a small index).
      await this.build();
      return;
    }
    const tagsOnly = docIds.filter((id) => !whole.has(id));
    const reload = [...whole, ...(tagsOnly.length > 0 ? await this.applyTags(tagsOnly) : [])];
    if (reload.length > 0) await this.apply(reload);
    this.changes += docIds.length;
    if (fresh.size > 0) this.opts.onChange?.({ all: false, docIds, personIds: [...people] });
    // Only now, with the documents reloaded, are the changes recorded and the horizon moved.
    for (const [seq, xid] of fresh) this.applied.set(seq, xid);
    const h = BigInt(poll.sync_h);
    if (h > this.horizon) {
      this.horizon = h;
      for (const [seq, xid] of this.applied) if (xid < h) this.applied.delete(seq);
    }
    this.lastPollAt = Date.now();
    this.recordHorizon(this.horizon);
    if (mayRebuild && this.index!.size.deadPassages > Math.max(10_000, this.index!.size.passages)) await this.build();
    if (mayRebuild) this.maybeSaveSnapshot();
  }

  private async apply(docIds: string[]): Promise<void> {
    const index = this.index!;
    const turns = new Turns();
    for (let i = 0; i < docIds.length; i += 1000) {
      const ids = docIds.slice(i, i + 1000);
      const r = await this.db.query<DocRow>(`${DOC_SELECT} WHERE d.is_active_version AND d.doc_id = ANY($1::uuid[])`, [ids]);
      const live = new Set<string>();
      for (const row of r.rows) {
        index.upsert(await toIndexed(row, turns));
        live.add(row.doc_id);
      }
      for (const id of ids) if (!live.has(id)) index.remove(id);
      this.counters.applied += ids.length;
    }
  }

  /**
   * Documents whose tags alone changed: their tags read (not their passages) and replaced in the index in
   * place. Returns the ids to reload whole instead (not active any more, or not in the index).
   */
  private async applyTags(docIds: string[]): Promise<string[]> {
    const index = this.index!;
    const reload: string[] = [];
    for (let i = 0; i < docIds.length; i += TAGS_PER_READ) {
      const ids = docIds.slice(i, i + TAGS_PER_READ);
      const r = await this.db.query<{ doc_id: string; tags: string[] | null }>(
        `SELECT d.doc_id::text AS doc_id,
                (SELECT array_agg(DISTINCT v) FROM (SELECT t.tag AS v FROM document_tags t WHERE t.doc_id = d.doc_id
                   UNION ALL SELECT t.tag FROM thread_tags t WHERE t.thread_id = d.thread_id) i) AS tags
           FROM documents d WHERE d.is_active_version AND d.doc_id = ANY($1::uuid[])`,
        [ids],
      );
      const tags = new Map<string, string[]>();
      for (const row of r.rows) tags.set(row.doc_id, tagIdentifiers(row.tags ?? []));
      reload.push(...index.setTags(tags), ...ids.filter((id) => !tags.has(id)));
      this.counters.tagsApplied += tags.size;
    }
    return reload;
  }

  private recordHorizon(h: bigint): void {
    const now = Date.now();
    const last = this.horizons[this.horizons.length - 1];
    if (!last || now - last.at > 60_000) this.horizons.push({ at: now, horizon: h });
  }

  /** Deletes log rows of transactions older than a horizon seen at least `retentionMs` ago. */
  private async prune(): Promise<void> {
    const cut = Date.now() - this.retentionMs;
    let old: bigint | null = null;
    while (this.horizons.length > 1 && this.horizons[1].at <= cut) this.horizons.shift();
    if (this.horizons[0] && this.horizons[0].at <= cut) old = this.horizons.shift()!.horizon;
    if (old === null) return;
    // How far the log is cut is recorded first (a snapshot at a position below it is not trusted).
    await this.db.query(
      `INSERT INTO system_settings (key, value) VALUES ($1, to_jsonb($2::text))
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value
        WHERE (system_settings.value #>> '{}')::numeric < (EXCLUDED.value #>> '{}')::numeric`,
      [PRUNED_KEY, old.toString()],
    );
    await this.db.query('DELETE FROM search_changes WHERE xid < $1::xid8', [old.toString()]);
  }
}

/** The database's instance id and schema level, as a snapshot records them (vector-memory.ts's too). */
export async function readIdentity(db: Queryable): Promise<SnapshotIdentity> {
  const instance = await serverInstanceId(db);
  const r = await db.query<{ count: number; latest: number }>(
    'SELECT count(*)::int AS count, coalesce(max(version), 0)::int AS latest FROM schema_migrations',
  );
  const d = await db.query<{ oid: string }>('SELECT oid::text AS oid FROM pg_database WHERE datname = current_database()');
  return { instance, migrations: { count: r.rows[0].count, latest: r.rows[0].latest }, database: d.rows[0].oid };
}

/** The change log's sequence as it stands (never goes back in one database). */
async function readLogSeq(db: Database): Promise<string> {
  const r = await db.query<{ v: string }>('SELECT last_value::text AS v FROM search_changes_seq_seq');
  return r.rows[0].v;
}
