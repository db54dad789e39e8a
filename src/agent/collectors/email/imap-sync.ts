/**
 * Continuous IMAP (issue 41, docs/sources.md): one connection per configured folder that keeps memex up to date.
 *
 * - IDLE where the server offers it (state `watching`): new mail, flag changes and expunges are pushed, a sync
 *   follows at once. Without IDLE (or `idle: false`), a sync every `poll_interval` (default 5m; state `polling`).
 *   Even while idling, a sync every poll_interval is the safety net.
 * - A sync fetches only what is new: the UIDs above the highest one done with (persisted, imap-state.ts), so a
 *   restarted agent fetches no message it stored already. Flags: with CONDSTORE, only the messages changed since
 *   the HIGHESTMODSEQ kept (FETCH … CHANGEDSINCE); without, the flags of every message. Expunges: when the folder
 *   holds fewer messages than known (or the server said EXPUNGE), the UIDs are compared.
 * - What changed at the source goes onto the stored documents without a new version (POST
 *   /v1/documents/source-state): metadata `folder`, `flags`, `deleted_at_source`. A message deleted (or moved
 *   away) at the source stays in memex, marked, unless the source sets `mirror_deletions: true`. Moved into
 *   another configured folder, it is the same document (same Message-ID and text): its folder follows.
 * - A dropped connection or a server restart: reconnect with back-off (1 s, 2 s, … 5 min). A refused login
 *   says so in words ("IMAP login refused for dana@…: check the app password") and keeps retrying, slowly.
 */
import os from 'node:os';
import type { ImapFlow } from 'imapflow';
import type { MailSourceConfig } from '../../config.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../../mail/parse.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import type { SourcesGateway, SourceStateUpdate } from '../../sources/gateway.ts';
import { Backoff, iso, laterIso, sleep, SourceBusyError, type Source, type SourceState, type SourceStatus } from '../../sources/source.ts';
import { formatDuration } from '../../sources/schedule.ts';
import { buildEmailDocument, disambiguatedSourceId } from '../../../mail/document.ts';
import { IMAP_BATCH_BYTES, IMAP_BATCH_MESSAGES, imapCoverageSource, type ImapEmailCollector } from './imap.ts';
import type { ImapFolderState, ImapStateStore, UidEntry } from './imap-state.ts';
import { parseCollectedMessage } from '../../../mail/collected-message.ts';
import { storeRedaction } from './store-redaction.ts';
import { submitEmailBatch, type BatchItem } from './submit.ts';

/** The flags recorded on documents; others (keywords, \Recent) are left out. */
const KEPT_FLAGS = new Set(['\\Seen', '\\Flagged', '\\Answered', '\\Draft']);
const keptFlags = (flags: Iterable<string> | undefined) => [...(flags ?? [])].filter((f) => KEPT_FLAGS.has(f)).sort();
const sameFlags = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export interface ImapSyncCounters {
  /** Message bodies fetched (BODY[] of one message each): what a restart must not repeat. */
  bodiesFetched: number;
  syncs: number;
  connects: number;
}

export interface ImapFolderSyncOptions {
  collector: ImapEmailCollector;
  gateway: GatewayClient;
  sources: SourcesGateway;
  store: ImapStateStore;
  source: MailSourceConfig;
  folder: string;
  /** From the source's poll_interval (default 5 min). */
  pollMs: number;
  /** false: never IDLE, poll (the source's `idle: false`). */
  idle: boolean;
  mirrorDeletions: boolean;
  log: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  redactModule?: MailSourceConfig['redact_pii'];
  gatewayUrl: string;
  /** Longest wait between reconnect attempts (default 5 min). */
  maxBackoffMs?: number;
}

export class ImapFolderSync implements Source {
  readonly identity;
  readonly label: string;
  onStatusChange?: () => void;
  readonly counters: ImapSyncCounters = { bodiesFetched: 0, syncs: 0, connects: 0 };
  private stopCtl: AbortController | null = null;
  private loop: Promise<void> | null = null;
  private client: ImapFlow | null = null;
  private wakeCtl = new AbortController();
  private expungeSeen = false;
  private flagsSeen = false;
  private syncing: Promise<void> | null = null;
  private state: SourceState = 'stopped';
  private lastError: string | null = null;
  private nextAt: number | null = null;
  private newestAtSource: string | null = null;
  private modeText = '';
  private readonly backoff: Backoff;
  private readonly lockKey: string;

  constructor(private readonly o: ImapFolderSyncOptions) {
    this.identity = imapCoverageSource(o.source.id, o.folder);
    this.label = `imap ${o.source.id}/${o.folder}`;
    this.lockKey = `${o.source.id}\u0000${o.folder}`;
    this.backoff = new Backoff(1000, o.maxBackoffMs ?? 300_000);
  }

  async start(): Promise<void> {
    if (this.loop) return;
    this.stopCtl = new AbortController();
    this.set('starting');
    this.loop = this.run(this.stopCtl.signal).finally(() => (this.loop = null));
  }

  async stop(): Promise<void> {
    this.stopCtl?.abort();
    this.wake();
    const c = this.client;
    if (c) await c.logout().catch(() => c.close());
    await this.loop;
    this.set('stopped');
  }

  async runNow(): Promise<void> {
    if (this.syncing || this.o.collector.running.has(this.lockKey)) throw new SourceBusyError(`A run for ${this.o.source.id}/${this.o.folder} is already in progress`);
    if (!this.loop) {
      // Not started (paused): one sync on a connection of its own.
      const client = await this.connect();
      try {
        await this.syncOnce(client);
      } finally {
        await client.logout().catch(() => client.close());
      }
      return;
    }
    this.flagsSeen = true;
    this.wake();
  }

  status(): SourceStatus {
    const st = this.o.store.get(this.o.source.id, this.o.folder);
    return {
      state: this.state,
      last_success_at: st?.last_success_at ?? null,
      newest_at_source: this.newestAtSource,
      newest_stored: st?.newest_stored ?? null,
      next_run_at: this.nextAt === null ? null : iso(this.nextAt),
      last_error: this.lastError,
      mode: this.modeText || (this.o.idle ? `IDLE where offered, else polling every ${formatDuration(this.o.pollMs)}` : `polling every ${formatDuration(this.o.pollMs)}`),
      detail: st ? { uidvalidity: st.uidvalidity, uid_max: st.uid_max, messages_known: Object.keys(st.uids).length, highestmodseq: st.highestmodseq } : undefined,
    };
  }

  private set(state: SourceState, nextAt: number | null = null): void {
    const changed = state !== this.state || nextAt !== this.nextAt;
    this.state = state;
    this.nextAt = nextAt;
    if (changed) this.onStatusChange?.();
  }

  private wake(): void {
    this.wakeCtl.abort();
  }

  private who(): string {
    return this.o.source.username ?? this.o.source.id;
  }

  /** A connection error in words for a person. */
  private explain(err: unknown): { text: string; login: boolean } {
    const e = err as Error & { status?: number; authenticationFailed?: boolean };
    if (e.status === 401 || e.authenticationFailed) {
      const what = this.o.source.auth?.kind === 'xoauth2' ? 'check the OAuth token' : 'check the app password';
      return { text: `IMAP login refused for ${this.who()}: ${what}`, login: true };
    }
    if (e.status === 404) return { text: e.message, login: true };
    return { text: e.message || String(err), login: false };
  }

  private async connect(): Promise<ImapFlow> {
    const src = this.o.source;
    const cred = await this.o.collector.credentials(src, { accountId: src.id, folder: this.o.folder, limit: null, since: null, before: null, dryRun: false, credentials: null });
    this.counters.connects++;
    // IDLE is broken and restarted every 4 minutes (below the socket timeout and the 29 minutes of RFC 2177).
    return this.o.collector.connect(src, cred, { maxIdleTime: 240_000, socketTimeout: 300_000 });
  }

  private async run(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      let client: ImapFlow | null = null;
      try {
        client = await this.connect();
        this.client = client;
        if (stop.aborted) break;
        const closed = new Promise<void>((resolve) => client!.once('close', () => resolve()));
        void closed.then(() => this.wake());
        client.on('exists', () => this.wake());
        client.on('expunge', () => {
          this.expungeSeen = true;
          this.wake();
        });
        client.on('flags', () => {
          this.flagsSeen = true;
          this.wake();
        });
        try {
          await client.mailboxOpen(this.o.folder, { readOnly: true });
        } catch (err) {
          throw Object.assign(new Error(`Folder ${this.o.folder} cannot be opened on ${this.o.source.id}: ${(err as Error).message}`), { status: 404 });
        }
        const idle = this.o.idle && client.capabilities.has('IDLE');
        this.modeText = idle ? `IDLE, checked every ${formatDuration(this.o.pollMs)}` : `polling every ${formatDuration(this.o.pollMs)}`;
        // Each pass: sync what changed, then wait for the server's word (IDLE) or the next poll.
        while (!stop.aborted && client.usable) {
          this.wakeCtl = new AbortController();
          await this.syncOnce(client);
          this.backoff.reset();
          this.lastError = null;
          if (stop.aborted || !client.usable) break;
          const wake = this.wakeCtl.signal;
          if (wake.aborted) continue;
          if (idle) {
            this.set('watching', null);
            const idling = client.idle().catch(() => undefined);
            await sleep(this.o.pollMs, wake);
            // The next command (the sync's FETCH) ends IDLE; wait for it to be over once the sync has begun.
            void idling;
          } else {
            this.set('polling', Date.now() + this.o.pollMs);
            await sleep(this.o.pollMs, wake);
          }
        }
        if (!stop.aborted) throw new Error(`the connection to ${this.o.source.host}:${this.o.source.port} was closed`);
      } catch (err) {
        if (stop.aborted) break;
        const { text, login } = this.explain(err);
        this.lastError = text;
        const wait = login ? Math.max(this.backoff.next(), 30_000) : this.backoff.next();
        this.o.log.warn({ source: this.label, err: text, retry_in_ms: wait }, login ? 'IMAP source cannot log in; trying again later' : 'IMAP source disconnected; reconnecting after a pause');
        this.set(login ? 'failed' : 'backing_off', Date.now() + wait);
        await sleep(wait, stop);
      } finally {
        this.client = null;
        if (client) await client.logout().catch(() => client!.close());
      }
    }
  }

  /** One sync of the open folder: new messages, flag changes, expunges; then the state is saved. */
  private async syncOnce(client: ImapFlow): Promise<void> {
    // The POST …:run route and this sync never overlap on a folder: whoever comes second waits (sync) or gets 409 (route).
    while (this.o.collector.running.has(this.lockKey)) await sleep(200, this.stopCtl?.signal);
    this.o.collector.running.add(this.lockKey);
    let done!: () => void;
    this.syncing = new Promise<void>((r) => (done = r));
    const before = this.state;
    try {
      if (before !== 'watching' && before !== 'polling') this.set('running');
      await this.syncBody(client);
      this.counters.syncs++;
    } finally {
      this.o.collector.running.delete(this.lockKey);
      this.syncing = null;
      done();
    }
  }

  private async syncBody(client: ImapFlow): Promise<void> {
    const src = this.o.source;
    const folder = this.o.folder;
    const box = client.mailbox;
    if (!box || typeof box === 'boolean') throw new Error('Mailbox not selected');
    // Sequence numbers and counts as of now (NOOP asks the server for news, e.g. after a poll).
    await client.noop();
    const uidValidity = String(box.uidValidity);
    const { state: st, replaced } = this.o.store.open(src.id, folder, uidValidity);
    if (replaced) this.o.log.warn({ source: this.label, previous: replaced.uidvalidity, current: uidValidity }, 'IMAP UIDVALIDITY changed: every message of the folder is examined again');
    const updates: SourceStateUpdate[] = [];
    const now = new Date().toISOString();
    const modseq = box.highestModseq !== undefined ? String(box.highestModseq) : null;
    // Set when the gateway could not take new mail: after the rest of the sync, the source backs off and tries again.
    let gatewayGone: string | null = null;

    // 1. New messages: the UIDs above the highest one done with. (UIDNEXT is not updated by EXISTS, so it is not
    // asked; `n:*` answers at least the last message, one small line when nothing is new.)
    if (box.exists > 0) {
      const fresh: Array<{ uid: number; flags: string[]; size: number; date: string | null }> = [];
      for await (const m of client.fetch(`${st.uid_max + 1}:*`, { uid: true, flags: true, size: true, internalDate: true }, { uid: true })) {
        if (m.uid <= st.uid_max) continue;
        if (st.uids[m.uid]) {
          // Stored by a POST …:run meanwhile: done, no body fetched.
          if (fresh.length === 0) st.uid_max = Math.max(st.uid_max, m.uid);
          continue;
        }
        const d = m.internalDate instanceof Date ? m.internalDate : m.internalDate ? new Date(m.internalDate) : null;
        fresh.push({ uid: m.uid, flags: keptFlags(m.flags), size: m.size ?? 0, date: d && !Number.isNaN(d.getTime()) ? d.toISOString() : null });
      }
      fresh.sort((a, b) => a.uid - b.uid);
      const policy = storeRedaction({ source: src.redact_pii, module: this.o.redactModule, gatewayUrl: this.o.gatewayUrl });
      const seenIds = new Map<string, string>();
      // In batches: one FETCH of the bodies and one POST …:batch per batch (a first sync of a big folder was one
      // round trip of each per message). The state is saved after each batch; a cut batch is fetched again and
      // answered as duplicates.
      for (let i = 0; i < fresh.length; ) {
        const batch: typeof fresh = [];
        let bytes = 0;
        while (i < fresh.length && batch.length < IMAP_BATCH_MESSAGES && (batch.length === 0 || bytes + fresh[i].size <= IMAP_BATCH_BYTES)) {
          bytes += fresh[i].size;
          batch.push(fresh[i++]);
        }
        const entries = await this.collectBatch(client, batch, policy.options, seenIds);
        for (const [k, m] of batch.entries()) {
          const entry = entries[k];
          if (entry === null) break; // the gateway is unavailable: the rest waits for the next sync
          st.uids[m.uid] = entry;
          st.uid_max = Math.max(st.uid_max, m.uid);
          if (entry.s && entry.k !== 'skipped') {
            updates.push({ source_type: 'email', source_id: entry.s, folder, flags: entry.f, deleted_at_source: null });
            if (m.date) st.newest_stored = laterIso(st.newest_stored, m.date);
          }
        }
        this.o.store.touch();
        this.o.store.save(true);
        if (entries.includes(null)) {
          gatewayGone = this.lastError ?? 'the gateway cannot take mail now';
          break;
        }
      }
    }

    // 2. Flag changes: CHANGEDSINCE the HIGHESTMODSEQ kept (CONDSTORE), else every message's flags.
    const condstore = modseq !== null && st.highestmodseq !== null;
    if (!condstore || modseq !== st.highestmodseq || this.flagsSeen) {
      this.flagsSeen = false;
      const opts = condstore && st.highestmodseq ? { uid: true, changedSince: BigInt(st.highestmodseq) } : { uid: true };
      if (box.exists > 0 && Object.keys(st.uids).length > 0) {
        for await (const m of client.fetch('1:*', { uid: true, flags: true }, opts)) {
          const e = st.uids[m.uid];
          if (!e) continue;
          const f = keptFlags(m.flags);
          if (sameFlags(f, e.f)) continue;
          e.f = f;
          this.o.store.touch();
          if (e.s && e.k !== 'skipped') updates.push({ source_type: 'email', source_id: e.s, folder, flags: f });
        }
      }
    }
    if (modseq !== null && modseq !== st.highestmodseq) {
      st.highestmodseq = modseq;
      this.o.store.touch();
    }

    // 3. Expunged (deleted or moved away): fewer messages than known, or the server said so.
    const known = Object.keys(st.uids).length;
    if (this.expungeSeen || box.exists < known) {
      this.expungeSeen = false;
      const found = await client.search({ all: true }, { uid: true });
      if (found !== false) {
        const present = new Set(found ?? []);
        for (const [uidText, e] of Object.entries(st.uids)) {
          if (present.has(Number(uidText))) continue;
          delete st.uids[uidText];
          this.o.store.touch();
          if (e.s && e.k !== 'skipped') updates.push({ source_type: 'email', source_id: e.s, folder, deleted_at_source: now, ...(this.o.mirrorDeletions ? { delete: true } : {}) });
        }
      }
    }

    // 4. The newest message at the source (the highest UID's INTERNALDATE).
    if (box.exists > 0) {
      const last = await client.fetchOne('*', { uid: true, internalDate: true }).catch(() => false as const);
      if (last && last.internalDate) this.newestAtSource = new Date(last.internalDate).toISOString();
    } else this.newestAtSource = null;

    if (updates.length) {
      try {
        await this.o.sources.sourceState(updates);
      } catch (err) {
        // The documents keep their old folder/flags until the next change; nothing of the mail is lost.
        this.o.log.warn({ source: this.label, err: (err as Error).message, updates: updates.length }, 'IMAP source: folder and flag changes not recorded at the gateway');
      }
    }
    if (gatewayGone) {
      this.o.store.save();
      throw new Error(gatewayGone);
    }
    st.last_success_at = new Date().toISOString();
    this.o.store.touch();
    this.o.store.save();
  }

  /**
   * Fetches, builds and submits new messages in one batch; each one's entry in order, or null from the first the
   * gateway cannot take now (it and the rest are fetched again by the next sync).
   */
  private async collectBatch(
    client: ImapFlow,
    batch: Array<{ uid: number; flags: string[]; size: number; date: string | null }>,
    redaction: ReturnType<typeof storeRedaction>['options'],
    seenIds: Map<string, string>,
  ): Promise<Array<UidEntry | null>> {
    const src = this.o.source;
    const entries: Array<UidEntry | null> = batch.map((m) => ({ k: 'skipped', s: null, f: m.flags }));
    const wanted = batch.filter((m) => {
      if (m.size <= MAX_EMAIL_FILE_BYTES) return true;
      this.o.log.warn({ source: this.label, uid: m.uid, size: m.size }, 'IMAP message larger than the limit: skipped');
      return false;
    });
    const bodies = new Map<number, Buffer>();
    if (wanted.length) {
      for await (const one of client.fetch(wanted.map((m) => m.uid).join(','), { uid: true, source: true }, { uid: true })) {
        if (one.source) bodies.set(one.uid, one.source);
      }
      this.counters.bodiesFetched += bodies.size;
    }
    const items: BatchItem[] = [];
    const at: number[] = [];
    for (const [k, m] of batch.entries()) {
      const body = bodies.get(m.uid);
      if (!body) continue; // too large, or expunged meanwhile
      let msg;
      try {
        msg = await parseCollectedMessage(body);
      } catch (err) {
        this.o.log.warn({ source: this.label, uid: m.uid, err: (err as Error).message }, 'IMAP message unparsable: skipped');
        continue;
      }
      const info = { sourceType: 'email' as const, prefix: `email_imap/${src.id}`, redaction, mailbox: this.o.folder, fallbackTimestamp: m.date };
      let built = buildEmailDocument(msg, info);
      if (built.messageId) {
        const prev = seenIds.get(built.messageId);
        if (prev !== undefined && prev !== built.textHash) built = buildEmailDocument(msg, info, { sourceIdOverride: disambiguatedSourceId(built.document.source_id, built.textHash) });
        else seenIds.set(built.messageId, built.textHash);
      }
      items.push({ built, original: msg.original });
      at.push(k);
    }
    if (!items.length) return entries;
    const outs = await submitEmailBatch(this.o.gateway, items);
    let stopAt = batch.length;
    for (const [j, out] of outs.entries()) {
      const k = at[j];
      const m = batch[k];
      if (out.status === 'retry') {
        this.lastError = `the gateway cannot take mail now (${out.httpStatus}): ${out.error ?? ''}`.trim();
        stopAt = Math.min(stopAt, k);
        continue;
      }
      if (out.status === 'rejected') {
        this.o.log.warn({ source: this.label, uid: m.uid, status: out.httpStatus }, 'IMAP message rejected by the gateway: skipped');
        continue;
      }
      entries[k] = { k: out.skipped ? 'blocked' : out.duplicate ? 'duplicate' : 'stored', s: items[j].built.document.source_id, f: m.flags };
    }
    for (let k = stopAt; k < batch.length; k++) entries[k] = null;
    return entries;
  }
}

export const agentName = () => os.hostname();
