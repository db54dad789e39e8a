/**
 * Keeps relationship edges fresh while the server runs: documents stored by the catalog are noted
 * (Catalog option onDocumentsIngested), and a few seconds after the last ingest the edges of the
 * persons they touch are recomputed — one targeted statement, never a full recompute per request.
 * A full recompute runs when the self person changes and every RELATIONSHIP_REFRESH_HOURS (recency
 * and the 30/90-day counts age even without new messages).
 */
import type { Database } from '../db/types.ts';
import type { RelationshipConfig } from './config.ts';
import { DEFAULT_RELATIONSHIP_CONFIG } from './config.ts';
import { recomputeRelationships, type RecomputeOptions, type RecomputeResult } from './recompute.ts';
import { MESSAGE_SOURCE_TYPES, personByIdentifier, resolveSelf, type SelfResolution } from './self.ts';

interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

const MAX_PENDING_DOCS = 100_000;

export class RelationshipService {
  readonly config: RelationshipConfig;
  private pending = new Set<string>();
  private fullPending = false;
  private timer: NodeJS.Timeout | null = null;
  private firstPendingAt = 0;
  private refreshTimer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private lastSelf: string | null = null;
  /**
   * The self person, kept for a minute (detection reads recent messages). An unknown one too, until new
   * documents arrive: while no self person was set, every relationships call ran the detection again
   * (6-7 s per call under load, issue 46).
   */
  private cachedSelf: { value: SelfResolution | null; at: number } | null = null;
  /** The owner's persons for leaving them out of lists (selfIds), unknown included, kept for half a minute. */
  private cachedOwner: { value: string[]; at: number } | null = null;
  /**
   * The detection in flight, shared by every caller meanwhile. It reads the newest 20,000 messages
   * (0.5-1.7 s at 300,000 documents): eight searches finding the cache expired at once each ran it,
   * and held every search for 5-8 s (docs/BENCHMARKS.md, 300,000 and 1,000,000 documents).
   */
  private selfInFlight: Promise<SelfResolution | null> | null = null;
  private ownerInFlight: Promise<string[]> | null = null;
  /** Bumped by requestFull: a detection started before it is not cached. */
  private selfGeneration = 0;
  /** Selves asked for by id (GET …/top?self_person_id=) whose edges this process computed and keeps fresh. */
  private askedSelves = new Set<string>();
  private closed = false;
  /** Outcome of the last refresh (for tests and logs). */
  lastResult: RecomputeResult | null = null;

  constructor(
    readonly db: Database,
    config: Partial<RelationshipConfig> = {},
    private log?: Logger,
  ) {
    this.config = { ...DEFAULT_RELATIONSHIP_CONFIG, ...config };
  }

  /** Where refresh outcomes are logged (counts and timings only). */
  setLogger(log: Logger): void {
    this.log = log;
  }

  /** Starts the periodic full refresh (the timer never keeps the process alive). */
  start(): void {
    if (this.refreshTimer || this.config.refreshHours <= 0) return;
    this.refreshTimer = setInterval(() => this.requestFull(), this.config.refreshHours * 3600_000);
    this.refreshTimer.unref();
  }

  /** Catalog hook: these documents were stored, re-versioned or deleted. */
  noteDocuments(docIds: string[]): void {
    if (this.closed || docIds.length === 0) return;
    // New messages may say who the owner is.
    if (this.cachedSelf?.value === null) this.cachedSelf = null;
    for (const id of docIds) {
      if (this.pending.size >= MAX_PENDING_DOCS) {
        // Too much at once (a backfill): a full recompute is cheaper than tracking every document.
        this.fullPending = true;
        this.pending.clear();
        break;
      }
      this.pending.add(id);
    }
    this.schedule();
  }

  /** A full recompute soon (self person changed, periodic refresh). */
  requestFull(): void {
    if (this.closed) return;
    this.fullPending = true;
    this.cachedSelf = null;
    this.cachedOwner = null;
    this.selfGeneration++;
    this.selfInFlight = null;
    this.ownerInFlight = null;
    this.schedule();
  }

  private schedule(): void {
    if (!this.firstPendingAt) this.firstPendingAt = Date.now();
    if (this.timer) clearTimeout(this.timer);
    // Debounce, but never wait more than maxDelayMs past the first unprocessed ingest.
    const wait = Math.max(0, Math.min(this.config.debounceMs, this.firstPendingAt + this.config.maxDelayMs - Date.now()));
    this.timer = setTimeout(() => this.flush().catch(() => undefined), wait);
    this.timer.unref();
  }

  /** Processes what is pending now (serialised with any refresh in progress). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const run = this.running.then(() => this.process());
    this.running = run.catch(() => undefined);
    return run;
  }

  private async process(): Promise<void> {
    const docs = [...this.pending];
    const full = this.fullPending;
    this.pending.clear();
    this.fullPending = false;
    this.firstPendingAt = 0;
    if (!full && docs.length === 0) return;
    const base: RecomputeOptions = {
      halfLifeDays: this.config.halfLifeDays,
      selfIdentifiers: this.config.selfIdentifiers,
      phoneRegion: this.config.phoneRegion,
    };
    try {
      // Incremental refreshes reuse the self person found within the last minute.
      const self = await this.self(full);
      if (!self) return await this.refreshAsked(null, full ? undefined : docs);
      let result: RecomputeResult;
      if (full || self.person_id !== this.lastSelf) {
        result = await recomputeRelationships(this.db, { ...base, selfPersonId: self.person_id });
      } else {
        const persons = await this.personsOf(docs);
        if (persons.length === 0) return;
        result = await recomputeRelationships(this.db, { ...base, selfPersonId: self.person_id, persons });
      }
      this.lastSelf = self.person_id;
      this.lastResult = result;
      await this.refreshAsked(self.person_id, full ? undefined : docs);
      this.log?.info(
        { mode: result.mode, edges_upserted: result.edges_upserted, edges_removed: result.edges_removed, ms: result.duration_ms },
        'relationship edges refreshed',
      );
    } catch (err) {
      // Nothing is lost: the next full refresh (or `memex relationships --recompute`) rebuilds every edge.
      for (const d of docs) this.pending.add(d);
      this.fullPending = this.fullPending || full;
      this.log?.warn({ err: { message: (err as Error).message } }, 'relationship refresh failed');
      throw err;
    }
  }

  /**
   * The self person, cached for a minute unless `fresh`. "Unknown" is never cached: a self person
   * that appears (a document, a setting, a contact card) is seen by the next request.
   */
  async self(fresh = false): Promise<SelfResolution | null> {
    if (!fresh && this.cachedSelf && Date.now() - this.cachedSelf.at < 60_000) return this.cachedSelf.value;
    if (this.selfInFlight) return this.selfInFlight;
    const generation = this.selfGeneration;
    const p = resolveSelf(this.db, this.config).then((value) => {
      if (generation === this.selfGeneration) this.cachedSelf = { value, at: Date.now() };
      return value;
    });
    this.selfInFlight = p;
    const done = () => {
      if (this.selfInFlight === p) this.selfInFlight = null;
    };
    p.then(done, done);
    return p;
  }

  /**
   * The persons that are the owner, never listed as a contact (people search, the search's person facet, the
   * ranking): the self person and the persons of every configured SELF_IDENTIFIERS entry (one address each may
   * have stayed a person of its own). Cached for half a minute, an unknown self too: lists are read often and
   * detection reads recent messages. Changing the self person (requestFull) forgets it.
   */
  async selfIds(): Promise<string[]> {
    const cached = this.cachedOwner;
    if (cached && Date.now() - cached.at < 30_000) return cached.value;
    const refresh = (this.ownerInFlight ??= this.readSelfIds());
    // Past half a minute the last list answers while one refresh runs behind it: a search never
    // waits for the detection, except the first after a start or after the self person changed.
    return cached ? cached.value : refresh;
  }

  private readSelfIds(): Promise<string[]> {
    const generation = this.selfGeneration;
    const p = (async () => {
      const self = await this.self();
      const ids = new Set<string>(self ? [self.person_id] : []);
      for (const ident of this.config.selfIdentifiers) {
        const id = await personByIdentifier(this.db, ident, null, this.config.phoneRegion);
        if (id) ids.add(id);
      }
      const value = [...ids];
      if (generation === this.selfGeneration) this.cachedOwner = { value, at: Date.now() };
      return value;
    })();
    const done = () => {
      if (this.ownerInFlight === p) this.ownerInFlight = null;
    };
    p.then(done, done);
    // A failed background refresh is retried by the next caller past the half minute.
    p.catch(() => undefined);
    return p;
  }

  /**
   * Makes sure the edges of `selfId` exist before they are read: the first time a person is asked
   * for (or the self person before the service's first refresh), its edges are computed now and
   * kept; later refreshes keep them fresh along with the self person's.
   */
  async ensureEdges(selfId: string): Promise<void> {
    if (selfId === this.lastSelf || this.askedSelves.has(selfId)) return;
    await this.recompute({ selfPersonId: selfId });
    if (selfId !== this.lastSelf) this.askedSelves.add(selfId);
  }

  /** The persons linked to these message documents: whose edges they can change. */
  private async personsOf(docs: string[]): Promise<string[]> {
    const r = await this.db.query<{ person_id: string }>(
      `SELECT DISTINCT dp.person_id FROM document_people dp JOIN documents d ON d.doc_id = dp.doc_id
        WHERE dp.doc_id = ANY($1::uuid[]) AND d.source_type = ANY($2::text[])
          AND dp.role IN ('sender', 'recipient', 'participant', 'contact')`,
      [docs, [...MESSAGE_SOURCE_TYPES]],
    );
    return r.rows.map((x) => x.person_id);
  }

  /** The asked-for selves get the refresh the self person got (targeted by `docs`, or full). */
  private async refreshAsked(mainSelf: string | null, docs: string[] | undefined): Promise<void> {
    if (mainSelf) this.askedSelves.delete(mainSelf);
    if (this.askedSelves.size === 0) return;
    const persons = docs ? await this.personsOf(docs) : undefined;
    if (persons && persons.length === 0) return;
    for (const selfId of this.askedSelves) {
      await recomputeRelationships(this.db, {
        halfLifeDays: this.config.halfLifeDays,
        selfIdentifiers: this.config.selfIdentifiers,
        phoneRegion: this.config.phoneRegion,
        selfPersonId: selfId,
        persons,
      });
    }
  }

  /** Full recompute now (CLI, admin). */
  async recompute(opts: Omit<RecomputeOptions, 'persons'> = {}): Promise<RecomputeResult> {
    const run = this.running.then(() =>
      recomputeRelationships(this.db, {
        halfLifeDays: this.config.halfLifeDays,
        selfIdentifiers: this.config.selfIdentifiers,
        phoneRegion: this.config.phoneRegion,
        ...opts,
      }),
    );
    this.running = run.then(
      (r) => {
        this.lastResult = r;
        if (!opts.selfPersonId || r.self_source !== 'given') this.lastSelf = r.self_person_id;
      },
      () => undefined,
    );
    return run;
  }

  /** Stops timers and waits for a refresh in progress. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.timer = this.refreshTimer = null;
    await this.running;
  }
}
