/**
 * The remote mailbox (IMAP) collector (host-agent spec §4.7, §5, §7; spec-notes B4.7), with imapflow.
 *
 * - The account must be a configured `type: imap` source (400 otherwise, 400 when the mail module is off).
 * - Credentials: app_password or XOAUTH2, from the source's secret_ref (keychain://, env://, file://) or an
 *   inline `secret` in the request, which lives in memory for this request only (never logged, never
 *   stored; the request body is not logged by the agent).
 * - Transport: implicit TLS by default (`tls: true`); with `tls: false` a STARTTLS upgrade is required
 *   unless the source sets `starttls: false` (cleartext, only sensible for a loopback test server).
 * - Identity of a message: (account, folder, UIDVALIDITY, UID); Message-ID is the second key. State is in
 *   memory only (spec): UIDs accepted earlier in this agent's life are skipped while UIDVALIDITY is
 *   unchanged. When UIDVALIDITY changes, the response says so (`uidValidityChanged`, previous value) and
 *   every message in the folder is looked at again — the gateway's idempotency turns resends of unchanged
 *   messages into duplicates, so nothing is dropped and nothing is stored twice. The IMAP location is not
 *   in the document metadata for the same reason.
 * - One bad message (unparsable, too large, rejected) is an entry in errors[], never the end of the run.
 * - Attachments are not downloaded as files (spec §4.7); their names and sizes are in metadata.
 */
import type { FastifyInstance } from 'fastify';
import { ImapFlow, type ImapFlowOptions } from 'imapflow';
import type { AgentConfig, MailSourceConfig } from '../../config.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../../mail/parse.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import { buildEmailDocument, disambiguatedSourceId } from '../../../mail/document.ts';
import { parseCollectedMessage } from '../../../mail/collected-message.ts';
import { SecretError, resolveSecretRef, type SecretResolverOptions } from './secrets.ts';
import { storeRedaction } from './store-redaction.ts';
import { submitEmailBatch } from './submit.ts';
import { CollectorHttpError } from './local.ts';
import { RunRecorder, type GatewayVerdict } from '../../../coverage/recorder.ts';
import type { SourceIdentity } from '../../../coverage/identity.ts';
import type { Census, LastRunView } from '../../../coverage/reconcile.ts';
import { reconcileSource } from '../../../coverage/reconcile.ts';
import type { CoverageReporter } from '../../../coverage/reporter.ts';
import type { RunCountsT } from '../../../schemas/coverage.ts';
import type { ImapStateStore } from './imap-state.ts';

export interface ImapRunRequest {
  accountId: string;
  folder: string;
  limit: number | null;
  since: Date | null;
  before: Date | null;
  dryRun: boolean;
  credentials: { kind: 'app_password' | 'xoauth2'; secretRef?: string; secret?: string } | null;
}

export interface ImapResultItem {
  uid: number;
  messageId: string | null;
  status: string;
  submissionId: string | null;
  docId: string | null;
  duplicate: boolean;
}

export interface ImapRunResponse {
  accountId: string;
  folder: string;
  totalFound: number;
  processed: number;
  submitted: number;
  duplicates: number;
  dryRun: boolean;
  since: string | null;
  before: string | null;
  uidValidity: string;
  uidValidityChanged: boolean;
  previousUidValidity: string | null;
  skippedKnown: number;
  results: ImapResultItem[];
  errors: Array<{ uid: number; reason: string }>;
  /** What the folder holds against what was stored (docs/coverage.md); null for a dry run. Also sent to the gateway. */
  coverage: RunCountsT | null;
}

/** The coverage source of an IMAP folder: one per account and folder; UIDVALIDITY is in its cursor and item refs. */
export function imapCoverageSource(accountId: string, folder: string): SourceIdentity {
  return { collector: 'email_imap', source_type: 'email', source_account_id: accountId, source_ref: folder };
}

/** An IMAP message as coverage names it: its folder, UIDVALIDITY and UID. */
export const imapRef = (folder: string, uidValidity: string, uid: number) => `${folder};UIDVALIDITY=${uidValidity};UID=${uid}`;

function parseDate(v: unknown, name: string): Date | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) throw new CollectorHttpError(400, `${name} must be an ISO 8601 date-time`);
  return new Date(v);
}

export function parseImapRequest(body: unknown): ImapRunRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new CollectorHttpError(400, 'Request body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.account_id !== 'string' || b.account_id.trim() === '') throw new CollectorHttpError(400, 'account_id is required');
  if (b.folder !== undefined && b.folder !== null && (typeof b.folder !== 'string' || b.folder.trim() === '')) {
    throw new CollectorHttpError(400, 'folder must be a non-empty string');
  }
  let limit: number | null = null;
  if (b.limit !== undefined && b.limit !== null) {
    if (typeof b.limit !== 'number' || !Number.isInteger(b.limit) || b.limit < 0 || b.limit > 100_000) {
      throw new CollectorHttpError(400, 'limit must be an integer between 0 and 100000 (0 = no limit)');
    }
    limit = b.limit === 0 ? null : b.limit;
  }
  if (b.dry_run !== undefined && typeof b.dry_run !== 'boolean') throw new CollectorHttpError(400, 'dry_run must be true or false');
  let credentials: ImapRunRequest['credentials'] = null;
  if (b.credentials !== undefined && b.credentials !== null) {
    const c = b.credentials as Record<string, unknown>;
    if (typeof c !== 'object' || Array.isArray(c)) throw new CollectorHttpError(400, 'credentials must be an object');
    const kindRaw = typeof c.kind === 'string' ? c.kind.toLowerCase().replace('-', '_') : 'app_password';
    const kind = ['app_password', 'password', 'basic'].includes(kindRaw) ? 'app_password' : kindRaw === 'xoauth2' ? 'xoauth2' : null;
    if (!kind) throw new CollectorHttpError(400, 'credentials.kind must be app_password or XOAUTH2');
    if (c.secret !== undefined && (typeof c.secret !== 'string' || c.secret === '')) throw new CollectorHttpError(400, 'credentials.secret must be a non-empty string');
    if (c.secret_ref !== undefined && typeof c.secret_ref !== 'string') throw new CollectorHttpError(400, 'credentials.secret_ref must be a string');
    credentials = { kind, secret: c.secret as string | undefined, secretRef: c.secret_ref as string | undefined };
  }
  const since = parseDate(b.since, 'since');
  const before = parseDate(b.before, 'before');
  if (since && before && since >= before) throw new CollectorHttpError(400, 'since must be earlier than before');
  return {
    accountId: b.account_id.trim(),
    folder: typeof b.folder === 'string' ? b.folder : '',
    limit,
    since,
    before,
    dryRun: b.dry_run === true,
    credentials,
  };
}

export interface ImapCollectorDeps {
  config: AgentConfig;
  gateway: GatewayClient;
  log: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
  secretOptions?: SecretResolverOptions;
  /** Connection timeouts (ms); tests may shorten them. */
  timeouts?: { connection?: number; greeting?: number; socket?: number };
  coverage?: CoverageReporter;
  /** The persisted per-folder state (imap-state.ts): a run skips what is stored there and records what it stores. */
  store?: ImapStateStore;
}

/** What became of a UID handled earlier: stored, a copy of another UID's message, kept out by the block list. */
type DoneAs = 'stored' | 'duplicate' | 'blocked';

interface FolderMemory {
  uidValidity: string;
  done: Map<number, DoneAs>;
}

export class ImapEmailCollector {
  /** In-memory state (spec §4.7): per account+folder, UIDVALIDITY and UIDs already accepted. */
  private readonly memory = new Map<string, FolderMemory>();
  /** Folders with a run under way (account NUL folder): the route and the continuous sync (imap-sync.ts) share it. */
  readonly running = new Set<string>();

  constructor(private readonly deps: ImapCollectorDeps) {}

  source(accountId: string): MailSourceConfig {
    const s = this.deps.config.modules.mail.sources.find((x) => x.id === accountId && x.type === 'imap');
    if (!s) throw new CollectorHttpError(400, 'IMAP account not found');
    if (!s.enabled) throw new CollectorHttpError(400, `IMAP account ${accountId} is disabled in configuration`);
    return s;
  }

  async credentials(src: MailSourceConfig, req: ImapRunRequest): Promise<{ kind: 'app_password' | 'xoauth2'; secret: string }> {
    const kind = req.credentials?.kind ?? src.auth?.kind ?? 'app_password';
    if (req.credentials?.secret) return { kind, secret: req.credentials.secret };
    const ref = req.credentials?.secretRef ?? src.auth?.secret_ref;
    if (!ref) throw new CollectorHttpError(400, 'Unable to resolve IMAP credentials: no secret_ref configured and no inline secret given');
    try {
      return { kind, secret: await resolveSecretRef(ref, this.deps.secretOptions) };
    } catch (err) {
      if (err instanceof SecretError) throw new CollectorHttpError(400, `Unable to resolve IMAP credentials: ${err.message}`);
      throw err;
    }
  }

  async run(body: unknown): Promise<ImapRunResponse> {
    const req = parseImapRequest(body);
    const src = this.source(req.accountId);
    const folder = req.folder || src.folders[0] || 'INBOX';
    const lockKey = `${src.id}\u0000${folder}`;
    if (this.running.has(lockKey)) throw new CollectorHttpError(409, `A run for ${src.id}/${folder} is already in progress`);
    this.running.add(lockKey);
    try {
      const cred = await this.credentials(src, req);
      return await this.collect(src, folder, req, cred);
    } finally {
      this.running.delete(lockKey);
    }
  }

  async connect(src: MailSourceConfig, cred: { kind: 'app_password' | 'xoauth2'; secret: string }, extra: Partial<ImapFlowOptions> = {}): Promise<ImapFlow> {
    const user = src.username ?? '';
    const t = this.deps.timeouts ?? {};
    const opts: ImapFlowOptions = {
      host: src.host!,
      port: src.port!,
      secure: src.tls,
      auth: cred.kind === 'xoauth2' ? { user, accessToken: cred.secret } : { user, pass: cred.secret },
      logger: false,
      connectionTimeout: t.connection ?? 30_000,
      greetingTimeout: t.greeting ?? 16_000,
      socketTimeout: t.socket ?? 300_000,
      disableAutoIdle: true,
      ...extra,
    };
    if (!src.tls && src.starttls) opts.doSTARTTLS = true;
    const client = new ImapFlow(opts);
    client.on('error', (err: Error) => this.deps.log.warn({ account: src.id, err: err.message }, 'IMAP connection error'));
    try {
      await client.connect();
    } catch (err) {
      const e = err as Error & { authenticationFailed?: boolean; responseText?: string };
      if (e.authenticationFailed) throw new CollectorHttpError(401, `IMAP authentication failed for account ${src.id}`);
      throw new CollectorHttpError(502, `Cannot connect to IMAP server ${src.host}:${src.port}: ${e.message}`);
    }
    return client;
  }

  /**
   * Recount of a folder for coverage (docs/coverage.md), nothing imported: its UIDs under their UIDVALIDITY.
   * When UIDVALIDITY differs from the last run's, every UID the last run stored names nothing any more: all of
   * the folder is new to memex's bookkeeping (the next run examines each message again; the gateway answers
   * the ones it holds as duplicates) and all of the last run's are gone.
   */
  async census(accountId: string, folder: string, last: LastRunView, given?: { kind: 'app_password' | 'xoauth2'; secret: string }): Promise<Census> {
    const src = this.source(accountId);
    const cred = given ?? (await this.credentials(src, { accountId, folder, limit: null, since: null, before: null, dryRun: true, credentials: null }));
    const client = await this.connect(src, cred);
    try {
      const lock = await client.getMailboxLock(folder, { readOnly: true });
      try {
        const box = client.mailbox;
        if (!box || typeof box === 'boolean') throw new Error('Mailbox not selected');
        const uidValidity = String(box.uidValidity);
        const found = await client.search({ all: true }, { uid: true });
        if (found === false) throw new Error('The IMAP server refused the search');
        const uids = found ?? [];
        const lastV = last.cursor?.uidvalidity != null ? String(last.cursor.uidvalidity) : null;
        const lastMax = typeof last.cursor?.uid_max === 'number' ? last.cursor.uid_max : null;
        const facts: Census['facts'] = { uidvalidity: uidValidity, messages: uids.length, uid_max: uids.length ? Math.max(...uids) : 0 };
        if (lastV !== null && lastV !== uidValidity) {
          return {
            in_source: uids.length,
            added: uids.length,
            removed: last.in_source ?? null,
            changed: null,
            facts: { ...facts, previous_uidvalidity: lastV, uidvalidity_changed: true },
            notes: [
              `UIDVALIDITY of ${folder} changed from ${lastV} to ${uidValidity}: the UIDs the last run counted no longer name the same messages. ` +
                'The next run examines every message of the folder again; the ones memex holds come back as duplicates.',
            ],
          };
        }
        const added = lastMax === null ? null : uids.filter((u) => u > lastMax).length;
        const removed = added === null || last.in_source === null ? null : Math.max(0, last.in_source - (uids.length - added));
        return { in_source: uids.length, added, removed, changed: null, facts: { ...facts, uidvalidity_changed: false } };
      } finally {
        lock.release();
      }
    } finally {
      await client.logout().catch(() => client.close());
    }
  }

  private async collect(src: MailSourceConfig, folder: string, req: ImapRunRequest, cred: { kind: 'app_password' | 'xoauth2'; secret: string }): Promise<ImapRunResponse> {
    const mail = this.deps.config.modules.mail;
    const client = await this.connect(src, cred);
    const policy = storeRedaction({ source: src.redact_pii, module: mail.redact_pii, gatewayUrl: this.deps.config.gateway.base_url });
    const redaction = policy.options;
    this.deps.log.info({ account: src.id, redaction: policy.label, decided_by: policy.from }, 'email_imap: redaction of the text sent to the gateway');
    const res: ImapRunResponse = {
      accountId: src.id,
      folder,
      totalFound: 0,
      processed: 0,
      submitted: 0,
      duplicates: 0,
      dryRun: req.dryRun,
      since: req.since?.toISOString() ?? null,
      before: req.before?.toISOString() ?? null,
      uidValidity: '',
      uidValidityChanged: false,
      previousUidValidity: null,
      skippedKnown: 0,
      results: [],
      errors: [],
      coverage: null,
    };
    // Every UID of the folder ends in one state (docs/coverage.md); a dry run stores nothing and reports nothing.
    const coverage = req.dryRun ? null : new RunRecorder(imapCoverageSource(src.id, folder));
    let cursor: Record<string, string | number> | null = null;
    try {
      let lock;
      try {
        lock = await client.getMailboxLock(folder, { readOnly: true });
      } catch (err) {
        throw new CollectorHttpError(404, `Folder ${folder} cannot be opened on ${src.id}: ${(err as Error).message}`);
      }
      try {
        const box = client.mailbox;
        if (!box || typeof box === 'boolean') throw new CollectorHttpError(502, 'Mailbox not selected');
        const uidValidity = String(box.uidValidity);
        res.uidValidity = uidValidity;
        const memKey = `${src.id}\u0000${folder}`;
        let mem = this.memory.get(memKey);
        if (mem && mem.uidValidity !== uidValidity) {
          res.uidValidityChanged = true;
          res.previousUidValidity = mem.uidValidity;
          this.deps.log.warn({ account: src.id, folder, previous: mem.uidValidity, current: uidValidity }, 'IMAP UIDVALIDITY changed: every message is examined again');
          mem = undefined;
        }
        if (!mem) {
          mem = { uidValidity, done: new Map() };
          this.memory.set(memKey, mem);
        }
        // What an earlier agent (or the continuous sync) stored under this UIDVALIDITY is done too.
        const kept = this.deps.store?.get(src.id, folder);
        if (kept && kept.uidvalidity === uidValidity) {
          for (const [u, e] of Object.entries(kept.uids)) if (e.k !== 'skipped' && !mem.done.has(Number(u))) mem.done.set(Number(u), e.k);
        }
        const query: Record<string, unknown> = {};
        if (req.since) query.since = req.since;
        // IMAP BEFORE is day-granular and exclusive; one second of slack as the original did.
        if (req.before) query.before = new Date(req.before.getTime() + 1000);
        if (!req.since && !req.before) query.all = true;
        const found = await client.search(query, { uid: true });
        if (found === false) throw new CollectorHttpError(502, 'The IMAP server refused the search');
        const uids = [...(found ?? [])].sort((a, b) => a - b);
        res.totalFound = uids.length;
        const todo = uids.filter((u) => !mem!.done.has(u));
        res.skippedKnown = uids.length - todo.length;
        const selected = req.limit === null ? todo : todo.slice(0, req.limit);
        const ref = (uid: number) => imapRef(folder, uidValidity, uid);
        if (coverage) {
          // The source is the whole folder: messages outside since/before are in it, left out by the request.
          const all = req.since || req.before ? await client.search({ all: true }, { uid: true }) : uids;
          const inRange = new Set(uids);
          for (const uid of all || uids) {
            if (!inRange.has(uid)) coverage.skipped(ref(uid), 'excluded', 'outside the since/before of the run');
          }
          for (const uid of uids) {
            const done = mem.done.get(uid);
            if (done === 'stored') coverage.stored(ref(uid), 'unchanged');
            else if (done === 'duplicate') coverage.skipped(ref(uid), 'duplicate', 'a copy of another message of the folder, stored once');
            else if (done === 'blocked') coverage.skipped(ref(uid), 'blocked', 'kept out by the block list');
          }
          const chosen = new Set(selected);
          for (const uid of todo) {
            if (chosen.has(uid)) coverage.seen(ref(uid));
            else coverage.pending(ref(uid), `not reached: this run's limit was ${req.limit} messages`, 'not_reached');
          }
          const whole = all || uids;
          cursor = { uidvalidity: uidValidity, uid_max: whole.length ? Math.max(...whole) : 0, messages: whole.length };
          // The gateway remembers the UIDVALIDITY of the last run even when this agent restarted since.
          const before = await this.deps.coverage?.source(coverage.source);
          const prev = before?.cursor?.uidvalidity;
          if (prev != null && String(prev) !== uidValidity) {
            cursor.previous_uidvalidity = String(prev);
            if (!res.uidValidityChanged) {
              res.uidValidityChanged = true;
              res.previousUidValidity = String(prev);
              this.deps.log.warn({ account: src.id, folder, previous: String(prev), current: uidValidity }, 'IMAP UIDVALIDITY changed since the last recorded run');
            }
          }
        }
        const sizes = new Map<number, { size: number; internalDate: string | null }>();
        if (selected.length) {
          for await (const m of client.fetch(selected.join(','), { uid: true, size: true, internalDate: true }, { uid: true })) {
            const d = m.internalDate instanceof Date ? m.internalDate : m.internalDate ? new Date(m.internalDate) : null;
            sizes.set(m.uid, { size: m.size ?? 0, internalDate: d && !Number.isNaN(d.getTime()) ? d.toISOString() : null });
          }
        }
        const seenIds = new Map<string, string>(); // Message-ID -> text hash, this run
        // Messages go to the gateway a batch at a time (one POST <ingest_path>:batch and one originals upload),
        // answered per message as one submission each would be.
        let pending: { uid: number; built: ReturnType<typeof buildEmailDocument>; original: Buffer }[] = [];
        let pendingBytes = 0;
        const flush = async () => {
          const batch = pending;
          pending = [];
          pendingBytes = 0;
          if (!batch.length) return;
          const outs = await submitEmailBatch(this.deps.gateway, batch);
          batch.forEach(({ uid, built }, i) => {
            const out = outs[i];
            coverage?.answered(ref(uid), out satisfies GatewayVerdict);
            if (out.status !== 'accepted') {
              res.errors.push({ uid, reason: `gateway ${out.status === 'rejected' ? 'rejected' : 'unavailable'} (${out.httpStatus}): ${out.error}` });
              return;
            }
            res.submitted++;
            if (out.duplicate) res.duplicates++;
            mem.done.set(uid, out.skipped ? 'blocked' : 'stored');
            if (this.deps.store) {
              const st = this.deps.store.open(src.id, folder, uidValidity).state;
              st.uids[uid] = { k: out.skipped ? 'blocked' : out.duplicate ? 'duplicate' : 'stored', s: built.document.source_id, f: [] };
              this.deps.store.touch();
            }
            res.results.push({
              uid,
              messageId: built.messageId,
              status: out.duplicate ? 'duplicate' : (out.gatewayStatus ?? 'accepted'),
              submissionId: out.submissionId,
              docId: out.docId,
              duplicate: out.duplicate,
            });
          });
          this.deps.store?.save(true);
        };
        for (const uid of selected) {
          const info = sizes.get(uid);
          if (!info) {
            res.errors.push({ uid, reason: 'message vanished before it could be fetched (expunged)' });
            coverage?.gone(ref(uid));
            continue;
          }
          if (info.size > MAX_EMAIL_FILE_BYTES) {
            res.errors.push({ uid, reason: `message is ${info.size} bytes; the limit is ${MAX_EMAIL_FILE_BYTES}` });
            coverage?.skipped(ref(uid), 'too_large', `message is ${info.size} bytes; the limit is ${MAX_EMAIL_FILE_BYTES}`);
            continue;
          }
          let source: Buffer | undefined;
          try {
            const m = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true });
            source = m ? m.source : undefined;
          } catch (err) {
            res.errors.push({ uid, reason: `fetch failed: ${(err as Error).message}` });
            coverage?.pending(ref(uid), `fetch failed: ${(err as Error).message}; tried again by the next run`, 'fetch_failed');
            if (!client.usable) break;
            continue;
          }
          if (!source) {
            res.errors.push({ uid, reason: 'message vanished before it could be fetched (expunged)' });
            coverage?.gone(ref(uid));
            continue;
          }
          res.processed++;
          let msg;
          try {
            msg = await parseCollectedMessage(source);
          } catch (err) {
            res.errors.push({ uid, reason: `unparsable message: ${(err as Error).message}` });
            coverage?.failed(ref(uid), `unparsable message: ${(err as Error).message}`, 'unparsable');
            continue;
          }
          const srcInfo = { sourceType: 'email' as const, prefix: `email_imap/${src.id}`, redaction, mailbox: folder, fallbackTimestamp: info.internalDate };
          let built = buildEmailDocument(msg, srcInfo);
          if (built.messageId) {
            const prev = seenIds.get(built.messageId);
            if (prev !== undefined && prev !== built.textHash) {
              // Same Message-ID, different message: a distinct document, not a new version of the first.
              built = buildEmailDocument(msg, srcInfo, { sourceIdOverride: disambiguatedSourceId(built.document.source_id, built.textHash) });
            } else if (prev === built.textHash) {
              res.results.push({ uid, messageId: built.messageId, status: 'duplicate', submissionId: null, docId: null, duplicate: true });
              res.duplicates++;
              if (!req.dryRun) mem.done.set(uid, 'duplicate');
              coverage?.skipped(ref(uid), 'duplicate', `a copy of another message of ${folder} (Message-ID ${built.messageId}), stored once`);
              continue;
            } else {
              seenIds.set(built.messageId, built.textHash);
            }
          }
          if (req.dryRun) {
            res.results.push({ uid, messageId: built.messageId, status: 'dry_run', submissionId: null, docId: null, duplicate: false });
            continue;
          }
          pending.push({ uid, built, original: msg.original });
          pendingBytes += msg.original.length;
          if (pending.length >= IMAP_BATCH_MESSAGES || pendingBytes >= IMAP_BATCH_BYTES) await flush();
        }
        await flush();
      } finally {
        lock.release();
      }
    } catch (err) {
      if (coverage && cursor) await this.deps.coverage?.sendRun(coverage.report({ cursor, error: (err as Error).message }));
      throw err;
    } finally {
      await client.logout().catch(() => client.close());
    }
    this.deps.store?.save();
    if (coverage) {
      res.coverage = coverage.counts();
      if (this.deps.coverage) {
        await this.deps.coverage.sendRun(coverage.report({ cursor }));
        // The recount after the run: what arrived or left while it ran, and a UIDVALIDITY that changed.
        const run = coverage;
        await reconcileSource(this.deps.coverage, run.source, (last) => this.census(src.id, folder, last, cred), {
          in_source: run.counts().in_source,
          cursor,
          startedAt: run.startedAt,
        }).catch((err) => this.deps.log.warn({ account: src.id, folder, err: (err as Error).message }, 'email_imap recount failed'));
      }
    }
    this.deps.log.info({ account: src.id, folder, found: res.totalFound, processed: res.processed, submitted: res.submitted, errors: res.errors.length }, 'email_imap run finished');
    return res;
  }
}

/** Messages fetched and sent to the gateway per batch (a run and the continuous source, imap-sync.ts), and their bytes. */
export const IMAP_BATCH_MESSAGES = 50;
export const IMAP_BATCH_BYTES = 16 * 1024 * 1024;

export function registerImapRoutes(app: FastifyInstance, collector: ImapEmailCollector, enabled: () => boolean): void {
  app.post('/v1/collectors/email_imap::run', async (req, reply) => {
    if (!enabled()) return reply.code(400).send({ error: 'IMAP collector is disabled (modules.mail.enabled is false)' });
    try {
      return await collector.run(req.body);
    } catch (err) {
      if (err instanceof CollectorHttpError) return reply.code(err.status).send({ error: err.message });
      throw err;
    }
  });
}
