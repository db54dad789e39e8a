/**
 * The local email collector (host-agent spec §2.4, §2.5, §4.6, §7; spec-notes B2.4–B2.6, B4.6).
 *
 * Reading of "simulate" mode: the spec's real mode reads Mail.app's Envelope Index, which only exists on
 * macOS and is a placeholder (501). Simulate mode stands in for the Mail.app store with a folder (or one
 * file) of .emlx files and does the whole job on them: it parses every file, builds the §2.6 document,
 * and submits it (plus attachments) to the gateway, tracking the §2.5 run state so that a second run
 * submits only what is new or not yet accepted. Stats keep the spec's meaning (messages_processed =
 * files parsed, documents_created = documents built) plus submission counters.
 *
 * Nothing lost: `.partial.emlx` files and nested mailbox folders are read; one unreadable file is a
 * warning, never the end of the run; a message the gateway did not accept stays in the run state and is
 * submitted again next run. Nothing twice: accepted documents are remembered by their idempotency key
 * (and unchanged files by size+mtime), the same message in two files is submitted once, and the gateway
 * deduplicates resends.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { expandHome, type AgentConfig } from '../../config.ts';
import { EmailInputError, MAX_EMAIL_FILE_BYTES, confinePath } from '../../../mail/parse.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import type { AgentMetrics } from '../../metrics.ts';
import type { AgentContext, AgentModule } from '../../modules.ts';
import { readSmallFile } from '../../../util/fs.ts';
import { buildEmailDocument, disambiguatedSourceId, type BuiltEmail } from '../../../mail/document.ts';
import { parseCollectedMessage, type CollectedMessage } from '../../../mail/collected-message.ts';
import { storeRedaction } from './store-redaction.ts';
import {
  LockHeldError,
  acquireLock,
  appendRejected,
  forgetAcceptedUnderOtherPolicy,
  loadState,
  pruneRejectedLogs,
  saveState,
  StateSavePacer,
  stateSnapshot,
  type AcceptedRecord,
  type PersistedState,
  type RunStateEntry,
} from './run-state.ts';
import { RunRecorder } from '../../../coverage/recorder.ts';
import type { CoverageReporter } from '../../../coverage/reporter.ts';
import { reconcileSource, type Census } from '../../../coverage/reconcile.ts';
import type { RunCountsT } from '../../../schemas/coverage.ts';
import { FLAGS_UNTOLD, sameFlags } from './manifest.ts';
import { submitEmailBatch, SubmitWindow, type BatchItem, type SubmitOptions, type SubmitOutcome } from './submit.ts';
import { MemexError } from '../../../util/errors.ts';

interface PendingItem extends BatchItem {
  entry: RunStateEntry;
  file: string;
  st: fs.Stats;
  /**
   * Other files of this run holding the same message, met while it was waiting to be sent or answered:
   * remembered as unchanged once it is accepted, like a copy met after the acceptance.
   */
  copies: { file: string; st: fs.Stats }[];
  coverage: RunRecorder;
  /** The .emlx file's flags (read, answered, flagged, draft): told to the gateway once the message is stored. */
  flags: string[] | null;
}

export interface LocalRunStats {
  messages_processed: number;
  documents_created: number;
  attachments_processed: number;
  errors_encountered: number;
  start_time: string;
  end_time: string;
  duration_ms: number;
  // memex additions: what happened to the documents
  files_found: number;
  files_skipped_unchanged: number;
  documents_skipped_already_accepted: number;
  documents_submitted: number;
  documents_accepted: number;
  documents_duplicate: number;
  documents_rejected: number;
  documents_retry_later: number;
  attachments_uploaded: number;
}

export type RunStatus = 'completed' | 'partial' | 'failed';

export interface LocalRunResult {
  status: RunStatus;
  mode: 'simulate';
  limit: number;
  simulate_path: string;
  stats: LocalRunStats;
  warnings: string[];
  /** What the folder holds against what was stored (docs/coverage.md); also sent to the gateway. */
  coverage: RunCountsT;
}

export class CollectorHttpError extends MemexError {
  constructor(
    status: number,
    message: string,
  ) {
    super(message, 'AGENT.COLLECTOR_REFUSED', status);
  }
}

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10_000;

/** Every *.emlx file (any case, `.partial.emlx` included) under `root`, sorted; symlinks are not followed. */
export async function findEmlxFiles(root: string): Promise<string[]> {
  const st = await fsp.lstat(root);
  if (st.isFile()) return /\.emlx$/i.test(root) ? [root] : [];
  const out: string[] = [];
  const walk = async (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return; // unreadable folder: skipped (permissions), the rest is still collected
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile() && /\.emlx$/i.test(e.name)) out.push(p);
    }
  };
  await walk(root);
  return out.sort();
}

/**
 * Recount of an .emlx tree for coverage (docs/coverage.md): every .emlx file, how many of them are
 * `.partial.emlx` (their attachments kept beside them), and how many changed since `since`.
 */
export async function emlxCensus(root: string, since: Date | null): Promise<Census> {
  const files = await findEmlxFiles(root);
  const partial = files.filter((f) => /\.partial\.emlx$/i.test(f)).length;
  let changed = 0;
  if (since) for (const f of files) if ((fs.statSync(f, { throwIfNoEntry: false })?.mtimeMs ?? 0) >= since.getTime()) changed++;
  return { in_source: files.length, changed: since ? changed : null, facts: { emlx: files.length - partial, partial_emlx: partial } };
}

/** Mailbox label of a file: its `.mbox` folders ("Work/Projects"), else the parent folder name. */
export function mailboxOf(file: string): string {
  const parts = path.dirname(file).split(path.sep);
  const boxes = parts.filter((p) => /\.mbox$/i.test(p)).map((p) => p.replace(/\.mbox$/i, ''));
  if (boxes.length) return boxes.join('/');
  const parent = parts.filter((p) => p && p !== '.' && p !== 'Messages' && !/^\d+$/.test(p) && p !== 'Data');
  return parent[parent.length - 1] ?? 'mail';
}

function newStats(start: Date): LocalRunStats {
  return {
    messages_processed: 0,
    documents_created: 0,
    attachments_processed: 0,
    errors_encountered: 0,
    start_time: start.toISOString(),
    end_time: start.toISOString(),
    duration_ms: 0,
    files_found: 0,
    files_skipped_unchanged: 0,
    documents_skipped_already_accepted: 0,
    documents_submitted: 0,
    documents_accepted: 0,
    documents_duplicate: 0,
    documents_rejected: 0,
    documents_retry_later: 0,
    attachments_uploaded: 0,
  };
}

export interface LocalCollectorDeps {
  config: AgentConfig;
  gateway: GatewayClient;
  metrics: AgentMetrics;
  log: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
  coverage?: CoverageReporter;
}

export class LocalEmailCollector {
  private running = false;
  private status: 'idle' | 'running' | RunStatus = 'idle';
  private lastRunTime: string | null = null;
  private lastRunStats: LocalRunStats | undefined;
  private lastRunError: string | null = null;
  /** How many files the last coverage report of each tree counted. */
  private readonly reportedFiles = new Map<string, number>();

  constructor(private readonly deps: LocalCollectorDeps) {}

  get isRunning(): boolean {
    return this.running;
  }

  state(): Record<string, unknown> {
    const st = this.deps.config.modules.mail.state;
    let persisted: PersistedState;
    try {
      persisted = loadState(st.run_state_path);
    } catch {
      persisted = { version: 1, last_accepted_rowid: null, entries: {}, accepted: {}, files: {}, source_ids: {} };
    }
    const out: Record<string, unknown> = {
      is_running: this.running,
      status: this.status,
      last_run_time: this.lastRunTime,
      last_run_error: this.lastRunError,
      run_state: stateSnapshot(persisted),
    };
    if (this.lastRunStats) out.last_run_stats = this.lastRunStats;
    return out;
  }

  private fail(status: number, message: string): never {
    this.status = 'failed';
    this.lastRunError = message;
    this.lastRunTime = new Date().toISOString();
    throw new CollectorHttpError(status, message);
  }

  /** Validates a run request body; throws CollectorHttpError(400). */
  static parseRequest(body: unknown): { mode: 'simulate' | 'real'; limit: number; simulatePath: string | null } {
    const b = (body ?? {}) as Record<string, unknown>;
    if (typeof b !== 'object' || Array.isArray(b)) throw new CollectorHttpError(400, 'Request body must be a JSON object');
    const modeRaw = b.mode ?? 'simulate';
    const mode = typeof modeRaw === 'string' ? modeRaw.toLowerCase() : modeRaw;
    if (mode !== 'simulate' && mode !== 'real') throw new CollectorHttpError(400, "Invalid mode: must be 'simulate' or 'real'");
    const limit = b.limit ?? DEFAULT_LIMIT;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new CollectorHttpError(400, `limit must be an integer between 1 and ${MAX_LIMIT}`);
    }
    const sp = b.simulate_path;
    if (sp !== undefined && sp !== null && typeof sp !== 'string') throw new CollectorHttpError(400, 'simulate_path must be a string');
    if (mode === 'simulate' && (typeof sp !== 'string' || sp.trim() === '')) {
      throw new CollectorHttpError(400, 'simulate_path is required in simulate mode');
    }
    return { mode, limit, simulatePath: typeof sp === 'string' ? sp : null };
  }

  /**
   * Runs the collector. Throws CollectorHttpError for the spec's 4xx/5xx answers. `quiet`: a run that found
   * nothing new sends no coverage report (a watched tree runs on every change; local-watch.ts).
   */
  async run(body: unknown, opts: { quiet?: boolean } = {}): Promise<LocalRunResult> {
    const req = LocalEmailCollector.parseRequest(body);
    if (this.running) throw new CollectorHttpError(409, 'Collector is already running');
    if (req.mode === 'real') this.fail(501, 'Real mode is not yet implemented');
    this.running = true;
    try {
      return await this.runSimulate(req.simulatePath!, req.limit, opts.quiet === true);
    } finally {
      this.running = false;
    }
  }

  private roots(): string[] {
    const m = this.deps.config.modules.mail;
    return [...m.sources.filter((s) => s.type === 'local' && s.source_path).map((s) => s.source_path!), ...m.allowed_roots];
  }

  private async runSimulate(requested: string, limit: number, quiet: boolean): Promise<LocalRunResult> {
    const { config, gateway, metrics, log } = this.deps;
    const mail = config.modules.mail;
    const stateCfg = mail.state;
    const expanded = path.resolve(expandHome(requested.trim()));
    if (!path.isAbsolute(expandHome(requested.trim()))) this.fail(400, 'simulate_path must be an absolute path');
    if (!fs.existsSync(expanded)) this.fail(404, `No file or directory found at path '${requested}'`);
    let real: string;
    try {
      real = await confinePath(expanded, this.roots());
    } catch (err) {
      if (err instanceof EmailInputError) this.fail(err.status, err.status === 403 ? `simulate_path is outside the configured mail roots (sources' source_path, modules.mail.allowed_roots)` : err.message);
      throw err;
    }
    const files = await findEmlxFiles(real);
    if (files.length === 0) this.fail(404, `No .emlx files found under '${requested}'`);

    let lock;
    try {
      lock = acquireLock(stateCfg.lock_file_path);
    } catch (err) {
      if (err instanceof LockHeldError) this.fail(423, err.message);
      throw err;
    }
    this.status = 'running';
    const start = new Date();
    const stats = newStats(start);
    const warnings: string[] = [];
    let state: PersistedState;
    let coverage: RunRecorder | undefined;
    try {
      state = loadState(stateCfg.run_state_path);
    } catch (err) {
      lock.release();
      this.fail(500, (err as Error).message);
    }
    try {
      pruneRejectedLogs(stateCfg.rejected_log_path, stateCfg.rejected_retention_days);
      // clear_on_new_run: the entry map shows this run; accepted documents live on in the index, and
      // entries that are not accepted yet are kept so their attempts keep counting.
      if (stateCfg.clear_on_new_run) {
        for (const [k, e] of Object.entries(state.entries)) if (e.status === 'accepted') delete state.entries[k];
      }
      const source = mail.sources.find((s) => s.type === 'local' && s.source_path && (real === s.source_path || real.startsWith(s.source_path + path.sep)));
      const policy = storeRedaction({ source: source?.redact_pii, module: mail.redact_pii, gatewayUrl: config.gateway.base_url });
      const redaction = policy.options;
      log.info({ redaction: policy.label, decided_by: policy.from }, 'email_local: redaction of the text sent to the gateway');
      const resend = forgetAcceptedUnderOtherPolicy(state, real, policy.label);
      if (resend) log.info({ messages: resend, redaction: policy.label }, 'email_local: the redaction policy changed; accepted mail is sent again (the gateway keeps a new version of each)');
      coverage = new RunRecorder({ collector: 'email_local', source_type: 'email_local', source_account_id: source?.id ?? null, source_ref: real });
      const window = new SubmitWindow(mail.submit_concurrency);
      // Messages of this run not yet accepted or refused, by idempotency key (batches and concurrency keep
      // several waiting while later files are read).
      const unanswered = new Map<string, PendingItem>();
      const keysThisRun = new Set<string>();
      // Flags of messages stored before whose .emlx changed: told after the run's messages are sent.
      const flagNews: Array<{ key: string; flags: string[] }> = [];
      const pacer = StateSavePacer.forState(state);
      stats.files_found = files.length;
      let pending: PendingItem[] = [];
      // Sends the pending messages (one request, or one batch) without waiting for the answer, keeping at
      // most submit_concurrency requests unanswered; parsing goes on meanwhile, and attachments upload
      // while the next batches go.
      const flush = async () => {
        if (!pending.length) return;
        const items = pending;
        pending = [];
        await window.add((onAnswered) =>
          this.submitItems(items, state, stats, warnings, { onAnswered, uploadLimiter: window.uploads }).finally(() => {
            for (const it of items) unanswered.delete(it.entry.key);
            if (pacer.add(items.length)) saveState(stateCfg.run_state_path, state);
          }),
        );
      };

      for (const [index, file] of files.entries()) {
        if (stats.messages_processed + stats.errors_encountered >= limit) {
          for (const rest of files.slice(index)) coverage.pending(rest, `not reached: this run's limit was ${limit} messages`, 'not_reached');
          break;
        }
        coverage.seen(file);
        const mailbox = mailboxOf(path.relative(path.dirname(real), file) || file);
        let st: fs.Stats;
        try {
          // Synchronous: one stat from the page cache costs less than a trip through the thread pool, and an
          // unchanged mailbox is mostly stats.
          st = fs.statSync(file);
        } catch (err) {
          stats.errors_encountered++;
          warnings.push(`Failed to parse ${path.basename(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
          coverage.failed(file, `unreadable: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'unreadable');
          continue;
        }
        const known = state.files[file];
        if (known && known.size === st.size && known.mtime_ms === st.mtimeMs && state.accepted[known.key]) {
          stats.files_skipped_unchanged++;
          recordAccepted(coverage, file, state.accepted[known.key]);
          continue;
        }
        metrics.emailLocalFoundTotal.inc({ mailbox });
        let msg: CollectedMessage;
        try {
          if (st.size > MAX_EMAIL_FILE_BYTES) throw new Error(`file is ${st.size} bytes; the limit is ${MAX_EMAIL_FILE_BYTES}`);
          msg = await parseCollectedMessage(await readSmallFile(file, st.size), { emlx: true, path: file, mtime: st.mtime });
        } catch (err) {
          stats.errors_encountered++;
          warnings.push(`Failed to parse ${path.basename(file)}: ${(err as Error).message}`);
          if (st.size > MAX_EMAIL_FILE_BYTES) coverage.skipped(file, 'too_large', (err as Error).message);
          else coverage.failed(file, `unreadable: ${(err as Error).message}`, 'unreadable');
          continue;
        }
        stats.messages_processed++;
        stats.attachments_processed += msg.attachments.length;
        for (const m of msg.attachmentsMissing) {
          warnings.push(`Attachment missing from ${path.basename(file)}: part ${m.part}${m.filename ? ` (${m.filename})` : ''} ${m.reason}`);
        }

        let built = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction, mailbox });
        // Two different messages with one Message-ID: the later one gets its own source id.
        const claim = state.source_ids[built.document.source_id];
        if (claim && claim.text_hash !== built.textHash && claim.location !== file) {
          built = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction, mailbox }, {
            sourceIdOverride: disambiguatedSourceId(built.document.source_id, built.textHash),
          });
        } else if (!claim) {
          state.source_ids[built.document.source_id] = { text_hash: built.textHash, location: file };
        }
        stats.documents_created++;
        const key = built.idempotencyKey;
        if (state.accepted[key] || keysThisRun.has(key)) {
          // Same message already accepted (or in flight) from another file or an earlier run.
          stats.documents_skipped_already_accepted++;
          if (state.accepted[key]) state.files[file] = { size: st.size, mtime_ms: st.mtimeMs, key };
          else unanswered.get(key)?.copies.push({ file, st });
          if (state.accepted[key]) recordAccepted(coverage, file, state.accepted[key]);
          // Read again because the file changed: Mail.app rewrites the .emlx when a message is read or flagged.
          const told = state.accepted[key];
          if (told && !told.skipped && msg.emlxFlags && !sameFlags(msg.emlxFlags, told.flags ?? FLAGS_UNTOLD)) flagNews.push({ key, flags: msg.emlxFlags });
          else coverage.skipped(file, 'duplicate', `a copy of ${unanswered.get(key)?.file ?? 'a message of this run'}, stored once`);
          continue;
        }
        keysThisRun.add(key);
        const entry: RunStateEntry = state.entries[key] ?? {
          key,
          row_id: null,
          external_id: built.document.source_id,
          status: 'found',
          attempts: 0,
          last_attempt_at: null,
          last_error: null,
          mailbox,
          path: file,
        };
        entry.path = file;
        entry.mailbox = mailbox;
        state.entries[key] = entry;

        const item: PendingItem = { built, attachments: msg.attachments, original: msg.original, entry, file, st, copies: [], coverage, flags: msg.emlxFlags };
        unanswered.set(key, item);
        pending.push(item);
        if (pending.length >= mail.batch_size) await flush();
      }
      await flush();
      await window.drain();
      await this.tellFlags(flagNews, state, warnings);
      saveState(stateCfg.run_state_path, state);
      const partial = files.filter((f) => /\.partial\.emlx$/i.test(f)).length;
      // Quiet and nothing new (no message read, none unreadable, no flag news, as many files as last reported).
      const unchanged = quiet && stats.messages_processed === 0 && stats.errors_encountered === 0 && flagNews.length === 0 && this.reportedFiles.get(real) === files.length;
      if (this.deps.coverage && !unchanged) {
        this.reportedFiles.set(real, files.length);
        await this.deps.coverage.sendRun(coverage.report({ cursor: { files: files.length, partial_emlx: partial } }));
        // The recount after the run: what changed in the folder while it ran.
        const run = coverage;
        await reconcileSource(this.deps.coverage, run.source, (last) => emlxCensus(real, last.startedAt), { in_source: run.counts().in_source, cursor: null, startedAt: run.startedAt }).catch(
          (err) => log.warn({ err: (err as Error).message }, 'email_local recount failed'),
        );
      }
    } catch (err) {
      // Unexpected failure (disk full writing state…): keep what we have and report.
      try {
        saveState(stateCfg.run_state_path, state);
      } catch {
        /* nothing more to do */
      }
      this.status = 'failed';
      this.lastRunError = (err as Error).message;
      log.warn({ err: (err as Error).message }, 'email_local run failed');
      if (coverage) await this.deps.coverage?.sendRun(coverage.report({ error: (err as Error).message }));
      throw err;
    } finally {
      lock.release();
    }

    const end = new Date();
    stats.end_time = end.toISOString();
    stats.duration_ms = end.getTime() - start.getTime();
    const failures = stats.errors_encountered + stats.documents_rejected + stats.documents_retry_later;
    const successes = stats.documents_accepted + stats.documents_skipped_already_accepted + stats.files_skipped_unchanged;
    const status: RunStatus = failures === 0 ? 'completed' : successes > 0 ? 'partial' : 'failed';
    this.status = status;
    this.lastRunTime = end.toISOString();
    this.lastRunStats = stats;
    this.lastRunError = failures === 0 ? null : `${failures} message(s) not collected; see warnings and run_state`;
    log.info({ status, processed: stats.messages_processed, accepted: stats.documents_accepted, failures }, 'email_local run finished');
    return { status, mode: 'simulate', limit, simulate_path: requested, stats, warnings, coverage: coverage!.counts() };
  }

  private async submitItems(
    items: PendingItem[],
    state: PersistedState,
    stats: LocalRunStats,
    warnings: string[],
    window: Pick<SubmitOptions, 'onAnswered' | 'uploadLimiter'> = {},
  ): Promise<void> {
    const { config, gateway, metrics } = this.deps;
    const mail = config.modules.mail;
    for (const it of items) {
      it.entry.status = 'submitted';
      it.entry.attempts++;
      it.entry.last_attempt_at = new Date().toISOString();
      stats.documents_submitted++;
      metrics.emailLocalSubmittedTotal.inc({ mailbox: it.entry.mailbox ?? 'mail' });
    }
    const outs = await submitEmailBatch(gateway, items, { uploadAttachments: mail.upload_attachments, maxAttachmentBytes: mail.max_attachment_bytes, ...window });
    items.forEach((it, i) => this.applyOutcome(it, outs[i], state, stats, warnings));
    // Mail.app's flags become the tags unread, flagged, replied (docs/organize.md), told once the message is stored.
    const news = items.flatMap((it, i) => (it.flags && outs[i].status === 'accepted' && !outs[i].skipped && !sameFlags(it.flags, FLAGS_UNTOLD) ? [{ key: it.entry.key, flags: it.flags }] : []));
    await this.tellFlags(news, state, warnings);
  }

  /**
   * Tells the gateway .emlx flags (POST /v1/documents/source-state) and records them as told. A refused call loses
   * no mail: it is a warning, and the flags stay untold, so the next run that reads the file tells them again.
   */
  private async tellFlags(news: Array<{ key: string; flags: string[] }>, state: PersistedState, warnings: string[]): Promise<void> {
    const { gateway } = this.deps;
    if (!news.length || !gateway.sourceState) return;
    for (let i = 0; i < news.length; i += 1000) {
      const part = news.slice(i, i + 1000).filter((n) => state.accepted[n.key]);
      try {
        await gateway.sourceState(part.map((n) => ({ source_type: 'email_local', source_id: state.accepted[n.key].source_id, flags: n.flags })));
        for (const n of part) state.accepted[n.key].flags = n.flags;
      } catch (err) {
        warnings.push(`Mail flags not recorded (told again when the file changes): ${(err as Error).message}`);
        return;
      }
    }
  }

  private applyOutcome(it: PendingItem, out: SubmitOutcome, state: PersistedState, stats: LocalRunStats, warnings: string[]): void {
    const { config, metrics } = this.deps;
    const mail = config.modules.mail;
    const { built, entry, file, st } = it;
    const mailbox = entry.mailbox ?? 'mail';
    metrics.emailLocalSubmissionLatencyMs.observe({ mailbox }, out.latencyMs);
    stats.attachments_uploaded += out.attachmentsUploaded;
    for (const s of out.attachmentsSkipped) warnings.push(`Attachment not uploaded from ${path.basename(file)}: ${s}`);
    it.coverage.answered(file, out);
    // Copies share the message's fate: skipped as copies once it is stored, failed or waiting with it otherwise.
    for (const c of it.copies) {
      if (out.status === 'accepted' && !out.skipped) it.coverage.skipped(c.file, 'duplicate', `a copy of ${file}, stored once`);
      else it.coverage.answered(c.file, out);
    }
    if (out.status === 'accepted') {
      entry.status = 'accepted';
      entry.last_error = null;
      entry.doc_id = out.docId;
      entry.duplicate = out.duplicate;
      stats.documents_accepted++;
      if (out.duplicate) stats.documents_duplicate++;
      metrics.emailLocalAcceptedTotal.inc({ mailbox, duplicate: String(out.duplicate) });
      state.accepted[entry.key] = { source_id: built.document.source_id, path: file, doc_id: out.docId, accepted_at: new Date().toISOString(), ...(out.skipped ? { skipped: out.skipped } : {}) };
      state.files[file] = { size: st.size, mtime_ms: st.mtimeMs, key: entry.key };
      for (const c of it.copies) state.files[c.file] = { size: c.st.size, mtime_ms: c.st.mtimeMs, key: entry.key };
      return;
    }
    entry.last_error = out.error;
    metrics.emailLocalRejectedTotal.inc({ mailbox, status: String(out.httpStatus) });
    if (out.status === 'rejected') {
      entry.status = 'rejected';
      stats.documents_rejected++;
      warnings.push(`Rejected ${path.basename(file)}: ${out.error}`);
      appendRejected(mail.state.rejected_log_path, {
        timestamp: new Date().toISOString(),
        rowID: entry.row_id,
        externalID: entry.external_id,
        idempotencyKey: entry.key,
        contentSHA: built.textHash,
        attempts: entry.attempts,
        lastServerResponse: { status: out.httpStatus, body: out.responseBody },
        path: file,
      });
    } else {
      // Gateway busy or unreachable: stays "submitted", sent again by the next run.
      stats.documents_retry_later++;
      warnings.push(`Not yet accepted ${path.basename(file)} (will retry next run): ${out.error}`);
    }
  }
}

export function registerLocalRoutes(app: FastifyInstance, collector: LocalEmailCollector, enabled: () => boolean): void {
  const disabled = { error: 'Email collector module is disabled' };
  app.post('/v1/collectors/email_local::run', async (req, reply) => {
    if (!enabled()) return reply.code(503).send(disabled);
    try {
      return await collector.run(req.body);
    } catch (err) {
      if (err instanceof CollectorHttpError) return reply.code(err.status).send({ error: err.message });
      throw err;
    }
  });
  app.get('/v1/collectors/email_local/state', async (_req, reply) => {
    if (!enabled()) return reply.code(503).send(disabled);
    return collector.state();
  });
}

export function localCollectorFor(ctx: AgentContext): LocalEmailCollector {
  return new LocalEmailCollector({ config: ctx.config, gateway: ctx.gateway, metrics: ctx.metrics, log: ctx.log, coverage: ctx.coverage });
}

/** A message accepted earlier: stored unchanged in its own file, a copy elsewhere, or kept out by the block list. */
function recordAccepted(coverage: RunRecorder, file: string, accepted: AcceptedRecord): void {
  if (accepted.skipped) coverage.skipped(file, 'blocked', `kept out by the block list (${accepted.skipped})`);
  else if (accepted.path && accepted.path !== file) coverage.skipped(file, 'duplicate', `a copy of ${accepted.path}, stored once`);
  else coverage.stored(file, 'unchanged');
}

export type { AgentModule };
