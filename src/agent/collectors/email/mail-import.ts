/**
 * Importing mail from files: mbox files and Maildir folders (plus loose .eml/.emlx files) into the gateway with
 * the same §2.6 payload and idempotency as the local collector; the core of `memex import mail` (src/cli/import-mail.ts).
 *
 * The gateway's idempotency makes a second import of the same mail a run of duplicates (nothing twice),
 * and a message that failed is simply sent again by the next import. A manifest (manifest.ts: per source
 * its size, mtime and Message-IDs, confirmed with the server before it is trusted) lets an unchanged
 * source be skipped without reading it, so re-importing an unchanged folder takes about as long as
 * listing it.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { ServerTarget } from '../../../client/target.ts';
import { expandHome, type AgentConfig } from '../../config.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../../mail/limits.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import { readSmallFile } from '../../../util/fs.ts';
import { readMboxFile } from '../../../mail/mbox.ts';
import { FLAGS_UNTOLD, maildirFlags, mboxFlags, mboxLabels, sameFlags, sourceKey, type MailManifest, type ManifestEntry, type MboxResume } from './manifest.ts';
import type { BatchItem, SubmitWindow } from './submit.ts';
import type { SubmitOutcome } from './outcome.ts';
import { storeRedaction, type StoreRedaction } from './store-redaction.ts';
import type { RunRecorder } from '../../../coverage/recorder.ts';

/**
 * The parser, the document builder and the sender, loaded when the first message must be read: an unchanged
 * rescan only lists and compares files, and the MIME and redaction modules take longer to load than that.
 */
let readersLoading: Promise<typeof import('../../../mail/collected-message.ts') & typeof import('../../../mail/document.ts') & typeof import('./submit.ts')> | null = null;
function readers() {
  readersLoading ??= Promise.all([import('../../../mail/collected-message.ts'), import('../../../mail/document.ts'), import('./submit.ts')]).then(([m, d, s]) => ({ ...m, ...d, ...s }));
  return readersLoading;
}

/** One message read from a store, before parsing. */
export interface RawMail {
  bytes: Buffer;
  /** Where it came from, for messages ("inbox.mbox#12", a Maildir file path). */
  location: string;
  mailbox: string;
  emlx: boolean;
  /** The mbox `From ` line, whose date stands in for a broken Date header. */
  fromLine?: string | null;
  /** Larger than the limit (then `bytes` is empty). */
  oversized?: boolean;
  /** Byte offset in its mbox file (mbox messages only). */
  offset?: number;
}

/**
 * The messages of an mbox file (see mbox.ts); one too large comes out empty, to be counted and reported.
 * `from` reads from a byte offset where a message starts, numbering from `firstIndex` (an appended mbox).
 */
export async function* readMbox(file: string, mailbox: string, from: { offset: number; firstIndex: number } = { offset: 0, firstIndex: 1 }): AsyncGenerator<RawMail> {
  for await (const m of readMboxFile(file, { maxMessageBytes: MAX_EMAIL_FILE_BYTES, start: from.offset })) {
    const index = m.index + from.firstIndex - 1;
    yield { bytes: m.bytes, location: `${file}#${index}`, mailbox, emlx: false, fromLine: m.fromLine, oversized: m.oversized, offset: m.offset };
  }
}

/** Bytes around a resume point: the file's first 4 KiB and the 4 KiB before the offset with the 5 after it. */
const RESUME_WINDOW = 4096;

/** A digest of what an mbox holds around `offset`: the same while the file is only appended to. */
async function resumeCheck(file: string, offset: number): Promise<string | null> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(file, 'r');
    const head = Buffer.alloc(Math.min(RESUME_WINDOW, offset));
    await fh.read(head, 0, head.length, 0);
    const start = Math.max(0, offset - RESUME_WINDOW);
    const around = Buffer.alloc(offset - start + 5);
    const { bytesRead } = await fh.read(around, 0, around.length, start);
    if (bytesRead !== around.length || around.subarray(around.length - 5).toString('latin1') !== 'From ') return null;
    return createHash('sha256').update(head).update(around).digest('base64url');
  } catch {
    return null;
  } finally {
    await fh?.close();
  }
}

/** Where to go on reading an mbox that grew since the manifest's entry, or null to read it all. */
async function resumePoint(s: ImportSource, prior: ManifestEntry | null, redaction: string): Promise<MboxResume | null> {
  const r = prior?.resume;
  if (!r || prior!.redaction !== redaction || s.bytes <= prior!.size || r.before > prior!.ids.length) return null;
  return (await resumeCheck(s.path, r.offset)) === r.check ? r : null;
}

function isMaildir(dir: string): boolean {
  return ['cur', 'new'].some((d) => {
    try {
      return fs.statSync(path.join(dir, d)).isDirectory();
    } catch {
      return false;
    }
  });
}

/** Maildir++ folder name of a directory: the root is INBOX, ".Work.Projects" is Work/Projects. */
function maildirName(dir: string, root: string): string {
  if (dir === root) return 'INBOX';
  const base = path.basename(dir);
  return base.startsWith('.') ? base.slice(1).split('.').join('/') : path.relative(root, dir) || base;
}

export interface ImportSource {
  kind: 'mbox' | 'maildir' | 'file';
  path: string;
  mailbox: string;
  bytes: number;
  /** Modification time (ms), for the manifest. */
  mtimeMs: number;
}

/** What PATH holds: an mbox file, a Maildir (with Maildir++ subfolders), or a tree containing those. */
export async function discoverSources(input: string): Promise<ImportSource[]> {
  const root = path.resolve(expandHome(input));
  const st = await fsp.stat(root);
  const out: ImportSource[] = [];
  if (st.isFile()) {
    if (/\.(eml|emlx)$/i.test(root)) out.push({ kind: 'file', path: root, mailbox: path.basename(path.dirname(root)), bytes: st.size, mtimeMs: st.mtimeMs });
    else out.push({ kind: 'mbox', path: root, mailbox: path.basename(root).replace(/\.mbox$/i, ''), bytes: st.size, mtimeMs: st.mtimeMs });
    return out;
  }
  const walk = async (dir: string, maildirRoot: string | null) => {
    const here = isMaildir(dir);
    const mdRoot = here && maildirRoot === null ? dir : maildirRoot;
    if (here) {
      for (const sub of ['cur', 'new']) {
        const d = path.join(dir, sub);
        let names: string[] = [];
        try {
          names = await fsp.readdir(d);
        } catch {
          continue;
        }
        // Synchronous lstat: from the page cache one costs microseconds, less than a promise and a trip through the
        // thread pool, and an unchanged rescan is mostly this (5,000 files: 0.1 s against 0.3-1.2 s in parallel).
        const mailbox = maildirName(dir, mdRoot ?? dir);
        for (const n of names.sort()) {
          if (n.startsWith('.')) continue; // dot files are no messages (Maildir writers' own)
          const p = path.join(d, n);
          const st = fs.lstatSync(p, { throwIfNoEntry: false });
          if (st?.isFile()) out.push({ kind: 'maildir', path: p, mailbox, bytes: st.size, mtimeMs: st.mtimeMs });
        }
      }
    }
    let entries: fs.Dirent[] = [];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (here && ['cur', 'new', 'tmp'].includes(e.name)) continue;
        await walk(p, here ? mdRoot : maildirRoot);
      } else if (e.isFile() && !here) {
        const s = await fsp.stat(p);
        if (/\.(eml|emlx)$/i.test(e.name)) out.push({ kind: 'file', path: p, mailbox: path.basename(dir), bytes: s.size, mtimeMs: s.mtimeMs });
        else if (/\.mbox$/i.test(e.name) || e.name === 'mbox') out.push({ kind: 'mbox', path: p, mailbox: e.name.replace(/\.mbox$/i, ''), bytes: s.size, mtimeMs: s.mtimeMs });
      }
    }
  };
  await walk(root, null);
  return out;
}

/** The messages of one source, in order. */
async function* readSource(s: ImportSource): AsyncGenerator<RawMail> {
  if (s.kind === 'mbox') {
    yield* readMbox(s.path, s.mailbox);
  } else if (s.bytes > MAX_EMAIL_FILE_BYTES) {
    yield { bytes: Buffer.alloc(0), location: s.path, mailbox: s.mailbox, emlx: false, oversized: true };
  } else {
    yield { bytes: await readSmallFile(s.path, s.bytes), location: s.path, mailbox: s.mailbox, emlx: /\.emlx$/i.test(s.path) };
  }
}

export interface ImportSummary {
  /** Messages read (or known unchanged from the manifest). */
  messages: number;
  /** New and duplicate messages the gateway accepted, plus unchanged and in-run copies. */
  accepted: number;
  duplicates: number;
  /** Of the duplicates: messages of unchanged sources, not read again (manifest). */
  unchanged: number;
  /** Maildir messages whose flags (read, flagged, replied) the gateway was told as new. */
  flagsUpdated: number;
  rejected: number;
  unreadable: number;
  retryLater: number;
  attachmentsUploaded: number;
  /** Of the accepted: messages the gateway stored as a new version of their document (their text or metadata changed). */
  newVersions: number;
  /** Of the accepted: messages the block list kept out (answered skipped; coverage counts them skipped, not stored). */
  blocked: number;
  /** Messages whose original the gateway now keeps (new ones and those it already had). */
  originalsStored: number;
  /** Files read (a Maildir message, an .eml, an mbox file, from its start or from where it was appended to). */
  sourcesRead: number;
  /** Of the accepted: messages the gateway answered only when sent again, after a slow or failed answer. */
  answeredOnRetry: number;
}

/** Messages stored for the first time: accepted, less duplicates, new versions and the kept out (the coverage's "new"). */
export function newMessages(s: ImportSummary): number {
  return s.accepted - s.duplicates - s.newVersions - s.blocked;
}

export interface ImportOptions {
  gateway: GatewayClient;
  config: AgentConfig;
  limit?: number | null;
  /** Batches in flight (default 2). */
  concurrency?: number;
  /** Messages per POST /v1/ingest:batch (default 100). */
  batchSize?: number;
  attachments?: boolean;
  dryRun?: boolean;
  /** What the stored copy redacts (default: the configuration, then config.gateway.base_url's rule). */
  redaction?: StoreRedaction;
  /** What earlier imports sent; sources it knows unchanged are not read. */
  manifest?: MailManifest | null;
  onMessage?: (summary: ImportSummary, bytes: number) => void;
  onProblem?: (location: string, reason: string) => void;
  /** The coverage recorder of the folder or file a source was found under (docs/coverage.md). */
  coverage?: (source: ImportSource) => RunRecorder | undefined;
  /**
   * Waits before each new attempt of the messages the gateway did not answer (timed out, 429, 5xx, not
   * reachable): they are sent again (the gateway's idempotency makes a second copy a duplicate) and counted
   * "not reachable" only when the last attempt fails too. Default RETRY_DELAYS_MS (about 4 minutes in all).
   */
  retryDelaysMs?: number[];
}

/** Waits before the new attempts of unanswered messages: a loaded server is given minutes, not seconds. */
export const RETRY_DELAYS_MS = [2_000, 5_000, 15_000, 30_000, 60_000, 120_000];

interface SourceProgress {
  key: string;
  entry: ManifestEntry;
  outstanding: number;
  read: boolean;
  failed: boolean;
  submissionId: string | null;
}

interface Pending {
  item: BatchItem;
  /** A Maildir (file name) or mbox (headers) message: its flags now, told to the gateway once it is stored. */
  flags?: string[];
  /** From an mbox: its flags are told each time it is read (the manifest has no entry per message). */
  mbox?: boolean;
  /** A Google Takeout mbox message's own Gmail labels, told with its flags (they become tags). */
  labels?: string[];
  location: string;
  bytes: number;
  source: SourceProgress;
  /** Position of the message in its source's manifest entry. */
  index: number;
  coverage: RunRecorder | undefined;
}

/**
 * Imports every message of the sources; the core of `memex import mail`, usable without the CLI. Messages
 * go to the gateway in batches (POST /v1/ingest:batch) while the next ones are parsed; attachments of a
 * batch are uploaded a few at a time once the batch is answered, while the next batches go. One logical
 * message per Message-ID: a copy of a message already sent in this import (the same message in two
 * folders) is counted as a duplicate and not sent again.
 * Every message read ends in exactly one count: new, duplicate, rejected, not reachable or unreadable.
 */
export async function importMail(sources: ImportSource[], opts: ImportOptions): Promise<ImportSummary> {
  const sum: ImportSummary = {
    messages: 0, accepted: 0, duplicates: 0, unchanged: 0, flagsUpdated: 0, rejected: 0, unreadable: 0, retryLater: 0, attachmentsUploaded: 0,
    newVersions: 0, blocked: 0, originalsStored: 0, sourcesRead: 0, answeredOnRetry: 0,
  };
  const policy = opts.redaction ?? storeRedaction({ module: opts.config.modules.mail.redact_pii, gatewayUrl: opts.config.gateway.base_url });
  const redaction = policy.options;
  const claims = new Map<string, string>(); // source_id -> text hash, this import
  const unchangedIds = new Set<string>(); // message keys of unchanged sources (not read)
  let windowMade: SubmitWindow | null = null;
  const window = async () => (windowMade ??= new (await readers()).SubmitWindow(opts.concurrency ?? 2));
  const drain = async () => windowMade?.drain();
  const batchSize = opts.batchSize ?? 100;
  const manifest = opts.dryRun ? null : (opts.manifest ?? null);
  const retryDelays = opts.retryDelaysMs ?? RETRY_DELAYS_MS;
  let batch: Pending[] = [];
  // Messages the gateway did not answer, to be sent again after a wait; `holding` false on the last attempt.
  let unanswered: Pending[] = [];
  let holding = retryDelays.length > 0;
  const retried = new Set<Pending>();

  // Maildir flags (the file name's letters) the gateway is to be told as source state once the messages are
  // stored: the tags unread, flagged, replied follow them (docs/organize.md). Recorded in the manifest only when told.
  // An mbox message's flags (its Status:, X-Status:, X-Gmail-Labels: headers) are told whenever it is read: the
  // manifest keeps one entry per mbox file, not per message (entry null).
  const flagNews: Array<{ entry: ManifestEntry | null; flags: string[]; update: { source_type: string; source_id: string; flags: string[]; labels?: string[] } }> = [];
  const tellFlags = (entry: ManifestEntry | null, flags: string[], sourceType: string, sourceIds: string[], labels?: string[]) => {
    if (entry && sameFlags(flags, entry.flags ?? FLAGS_UNTOLD)) return;
    for (const id of sourceIds) flagNews.push({ entry, flags, update: { source_type: sourceType, source_id: id, flags, ...(labels ? { labels } : {}) } });
  };

  const settle = (src: SourceProgress) => {
    if (src.read && src.outstanding === 0 && !src.failed) manifest?.record(src.key, src.entry, src.submissionId);
  };
  const deliver = (it: Pending, out: SubmitOutcome) => {
    sum.attachmentsUploaded += out.attachmentsUploaded;
    it.coverage?.answered(it.location, out);
    if (out.status === 'accepted') {
      sum.accepted++;
      if (retried.has(it)) sum.answeredOnRetry++;
      // Counted as the coverage recorder counts the same answer (recorder.ts `answered`).
      if (out.skipped) sum.blocked++;
      else if (out.duplicate) sum.duplicates++;
      else if ((out.versionNumber ?? 1) > 1) sum.newVersions++;
      if (out.originalStored) sum.originalsStored++;
      it.source.submissionId ??= out.submissionId;
      // Kept out by the block list: an unchanged source counts it skipped again without reading it.
      if (out.skipped) (it.source.entry.skipped ??= {})[it.index] = 'blocked';
      else if (it.flags) tellFlags(it.mbox ? null : it.source.entry, it.flags, it.item.built.document.source_type, [it.item.built.document.source_id], it.labels);
    } else {
      if (out.status === 'rejected') sum.rejected++;
      else sum.retryLater++;
      it.source.failed = true;
      opts.onProblem?.(it.location, out.error ?? 'not accepted');
    }
    it.source.outstanding--;
    settle(it.source);
    opts.onMessage?.(sum, it.bytes);
  };
  const send = async (items: Pending[]) => {
    const { submitEmailBatch } = await readers();
    const w = await window();
    await w.add(async (onAnswered) => {
      const outs = await submitEmailBatch(opts.gateway, items.map((i) => i.item), {
        uploadAttachments: opts.attachments ?? true,
        maxAttachmentBytes: opts.config.modules.mail.max_attachment_bytes,
        onAnswered,
        uploadLimiter: w.uploads,
      });
      outs.forEach((out, i) => {
        // Not answered is not lost: the gateway may be storing it still. Sent again after a wait.
        if (out.status === 'retry' && holding) unanswered.push(items[i]);
        else deliver(items[i], out);
      });
    });
  };
  const flush = async () => {
    if (batch.length === 0) return;
    const items = batch;
    batch = [];
    await send(items);
  };

  let stoppedAt = -1;
  outer: for (const [sourceIndex, s] of sources.entries()) {
    if (opts.limit && sum.messages >= opts.limit) {
      stoppedAt = sourceIndex;
      break;
    }
    const key = sourceKey(s.kind, s.path);
    const known = manifest?.unchanged(key, s.bytes, s.mtimeMs, policy.label);
    const coverage = opts.coverage?.(s);
    if (known && (!opts.limit || sum.messages + known.ids.length <= opts.limit)) {
      if (coverage) recordUnchanged(coverage, s, known);
      // A rename (read, flagged, answered elsewhere) keeps the message unchanged; its flags are news.
      if (s.kind === 'maildir') tellFlags(known, maildirFlags(s.path), 'email_local', known.ids.filter((_, i) => !known.skipped?.[i]).map((id) => `email:${id}`));
      const n = known.ids.length;
      sum.messages += n;
      sum.accepted += n;
      sum.duplicates += n;
      sum.unchanged += n;
      for (const id of known.ids) unchangedIds.add(id);
      opts.onMessage?.(sum, s.bytes);
      continue;
    }
    // A file read again (it changed: Mail.app rewrites an .emlx when a message is read) keeps the flags told before,
    // so only a change of them is told.
    const toldBefore = s.kind === 'mbox' ? undefined : manifest?.previous(key)?.flags;
    const src: SourceProgress = {
      key, entry: { size: s.bytes, mtime: s.mtimeMs, ids: [], redaction: policy.label, ...(toldBefore ? { flags: toldBefore } : {}) }, outstanding: 0, read: false, failed: false, submissionId: null,
    };
    // An mbox that was only appended to: its messages up to the last one read before are not read again.
    const resume = s.kind === 'mbox' && manifest && (!opts.limit || sum.messages + (manifest.previous(key)?.resume?.before ?? 0) <= opts.limit)
      ? await resumePoint(s, manifest.previous(key), policy.label)
      : null;
    if (resume) {
      const prior = manifest!.previous(key)!;
      const kept: ManifestEntry = { ...prior, ids: prior.ids.slice(0, resume.before) };
      if (prior.skipped) kept.skipped = Object.fromEntries(Object.entries(prior.skipped).filter(([i]) => Number(i) < resume.before));
      if (coverage) recordUnchanged(coverage, s, kept);
      src.entry.ids = [...kept.ids];
      if (kept.skipped) src.entry.skipped = { ...kept.skipped };
      const n = kept.ids.length;
      sum.messages += n;
      sum.accepted += n;
      sum.duplicates += n;
      sum.unchanged += n;
      for (const id of kept.ids) unchangedIds.add(id);
    }
    sum.sourcesRead++;
    let lastOffset: number | null = null;
    const reading = s.kind === 'mbox' ? readMbox(s.path, s.mailbox, resume ? { offset: resume.offset, firstIndex: resume.before + 1 } : undefined) : readSource(s);
    for await (const raw of reading) {
      if (raw.offset !== undefined) lastOffset = raw.offset;
      if (opts.limit && sum.messages >= opts.limit) {
        // Not read to the end: not recorded in the manifest, and the rest of it is not counted.
        coverage?.pending(`${s.path} (the rest)`, `not read: the import stopped at --limit ${opts.limit}`, 'not_reached');
        stoppedAt = sourceIndex + 1;
        break outer;
      }
      sum.messages++;
      coverage?.seen(raw.location);
      const report = () => opts.onMessage?.(sum, raw.bytes.length);
      if (raw.bytes.length === 0) {
        sum.unreadable++;
        src.failed = true;
        opts.onProblem?.(raw.location, `empty or larger than ${MAX_EMAIL_FILE_BYTES} bytes`);
        if (raw.oversized) coverage?.skipped(raw.location, 'too_large', `larger than ${MAX_EMAIL_FILE_BYTES} bytes`);
        else coverage?.skipped(raw.location, 'empty', 'empty file');
        report();
        continue;
      }
      const { parseCollectedMessage, buildEmailDocument, disambiguatedSourceId } = await readers();
      let msg;
      try {
        msg = await parseCollectedMessage(raw.bytes, { emlx: raw.emlx, path: raw.emlx ? raw.location : undefined, mboxFromLine: raw.fromLine });
      } catch (err) {
        sum.unreadable++;
        src.failed = true;
        opts.onProblem?.(raw.location, (err as Error).message);
        coverage?.failed(raw.location, `unreadable: ${(err as Error).message}`, 'unreadable');
        report();
        continue;
      }
      // No mailbox in the document: one logical message, whichever folders hold copies of it.
      const info = { sourceType: 'email_local' as const, prefix: 'email', redaction };
      let built = buildEmailDocument(msg, info);
      src.entry.ids.push(built.messageKey);
      const prev = claims.get(built.document.source_id);
      if (prev === built.textHash || (prev === undefined && unchangedIds.has(built.messageKey))) {
        // The same message again (another folder, an unchanged source, a copy in one mbox): sent already.
        sum.accepted++;
        sum.duplicates++;
        coverage?.skipped(raw.location, 'duplicate', `a copy of message ${built.messageKey}, stored once`);
        (src.entry.skipped ??= {})[src.entry.ids.length - 1] = 'duplicate';
        report();
        continue;
      }
      if (prev !== undefined) {
        built = buildEmailDocument(msg, info, { sourceIdOverride: disambiguatedSourceId(built.document.source_id, built.textHash) });
      } else claims.set(built.document.source_id, built.textHash);
      if (opts.dryRun) {
        report();
        continue;
      }
      src.outstanding++;
      batch.push({
        item: { built, attachments: msg.attachments, original: msg.original },
        flags: s.kind === 'maildir' ? maildirFlags(s.path) : s.kind === 'mbox' ? (mboxFlags(raw.bytes) ?? undefined) : (msg.emlxFlags ?? undefined),
        mbox: s.kind === 'mbox',
        labels: s.kind === 'mbox' ? (mboxLabels(raw.bytes) ?? undefined) : undefined,
        location: raw.location, bytes: raw.bytes.length, source: src, index: src.entry.ids.length - 1, coverage,
      });
      if (batch.length >= batchSize) await flush();
    }
    src.read = true;
    // The last message is read again next time (it may have been half written): the rest is not.
    if (s.kind === 'mbox' && lastOffset !== null && src.entry.ids.length > 0) {
      const check = await resumeCheck(s.path, lastOffset);
      if (check) src.entry.resume = { offset: lastOffset, before: src.entry.ids.length - 1, check };
    }
    settle(src);
  }
  await flush();
  await drain();
  for (const [round, delay] of retryDelays.entries()) {
    if (unanswered.length === 0) break;
    await new Promise((r) => setTimeout(r, delay));
    holding = round < retryDelays.length - 1;
    const again = unanswered;
    unanswered = [];
    for (const it of again) retried.add(it);
    // One batch at a time: the gateway was slow or away, so it is not given more at once than before.
    for (let i = 0; i < again.length; i += batchSize) await send(again.slice(i, i + batchSize));
    await drain();
  }
  if (stoppedAt >= 0) {
    for (const s of sources.slice(stoppedAt)) opts.coverage?.(s)?.pending(s.path, `not read: the import stopped at --limit ${opts.limit}`, 'not_reached');
  }
  await sendFlagNews(opts, flagNews, sum);
  return sum;
}

/**
 * Tells the gateway the Maildir flags that changed (POST /v1/documents/source-state, 1,000 per call) and records
 * them in the manifest entries once told. A call that fails is said as a problem and its flags stay untold in the
 * manifest, so the next import tells them again; the messages themselves are stored either way.
 */
async function sendFlagNews(
  opts: ImportOptions,
  news: Array<{ entry: ManifestEntry | null; flags: string[]; update: object }>,
  sum: ImportSummary,
): Promise<void> {
  if (news.length === 0 || !opts.gateway.sourceState || opts.dryRun) return;
  for (let i = 0; i < news.length; i += 1000) {
    const part = news.slice(i, i + 1000);
    try {
      await opts.gateway.sourceState(part.map((n) => n.update));
      for (const n of part) if (n.entry) n.entry.flags = n.flags;
      sum.flagsUpdated += part.length;
    } catch (err) {
      opts.onProblem?.('mail flags', `not recorded (the next import tries again): ${(err as Error).message}`);
      return;
    }
  }
}

/** The messages of a source the manifest knows unchanged (not read again): stored, or skipped as they were. */
function recordUnchanged(coverage: RunRecorder, s: ImportSource, known: ManifestEntry): void {
  known.ids.forEach((id, i) => {
    const ref = s.kind === 'mbox' ? `${s.path}#${i + 1}` : s.path;
    const why = known.skipped?.[i];
    if (why === 'duplicate') coverage.skipped(ref, 'duplicate', `a copy of message ${id}, stored once`);
    else if (why === 'blocked') coverage.skipped(ref, 'blocked', 'on the block list when it was sent (forget with block)');
    else coverage.stored(ref, 'unchanged');
  });
}

/** What the gateway said of a manifest: it holds what the manifest recorded, it does not, or it did not answer. */
export type ManifestCheck = 'confirmed' | 'gone' | 'unanswered';

/**
 * Whether the gateway still holds a submission the manifest recorded (GET /v1/ingest/{id}): only a 404 (a new
 * or emptied server) says it does not, and the manifest is then not trusted. A slow or busy gateway is asked
 * again with longer waits (`timeoutsMs`, one per attempt); when it never answers the manifest stands: what
 * it knows unchanged needs nothing from the gateway. An empty manifest needs no confirmation.
 */
export async function confirmManifest(manifest: MailManifest, target: Pick<ServerTarget, 'url' | 'token'>, timeoutsMs: number[] = [30_000, 60_000, 120_000]): Promise<ManifestCheck> {
  if (manifest.size === 0) return 'confirmed';
  const id = manifest.confirmations[0];
  if (!id) return 'gone';
  for (const [attempt, timeout] of timeoutsMs.entries()) {
    if (attempt) await new Promise((r) => setTimeout(r, 1000 * attempt));
    try {
      const r = await fetch(`${target.url}/v1/ingest/${encodeURIComponent(id)}`, {
        headers: target.token ? { authorization: `Bearer ${target.token}` } : {},
        signal: AbortSignal.timeout(timeout),
      });
      await r.body?.cancel();
      if (r.ok) return 'confirmed';
      if (r.status === 404) return 'gone';
    } catch {
      /* timed out or not reachable: asked again */
    }
  }
  return 'unanswered';
}
