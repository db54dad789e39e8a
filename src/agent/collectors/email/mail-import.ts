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
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { ServerTarget } from '../../../client/target.ts';
import { expandHome, type AgentConfig } from '../../config.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../email/parse.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import { readSmallFile } from '../../../util/fs.ts';
import { buildEmailDocument, disambiguatedSourceId } from './document.ts';
import { readMboxFile } from './mbox.ts';
import { parseCollectedMessage } from './message.ts';
import { sourceKey, type MailManifest, type ManifestEntry } from './manifest.ts';
import { submitEmailBatch, SubmitWindow, type BatchItem } from './submit.ts';
import { storeRedaction, type StoreRedaction } from './store-redaction.ts';
import type { RunRecorder } from '../../../coverage/recorder.ts';

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
}

/** The messages of an mbox file (see mbox.ts); one too large comes out empty, to be counted and reported. */
export async function* readMbox(file: string, mailbox: string): AsyncGenerator<RawMail> {
  for await (const m of readMboxFile(file, { maxMessageBytes: MAX_EMAIL_FILE_BYTES })) {
    yield { bytes: m.bytes, location: `${file}#${m.index}`, mailbox, emlx: false, fromLine: m.fromLine, oversized: m.oversized };
  }
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
        // lstat a few hundred at a time: one by one, listing a 10,000-message folder takes most of an unchanged re-import.
        const sorted = names.sort();
        for (let i = 0; i < sorted.length; i += 256) {
          const part = sorted.slice(i, i + 256).map((n) => path.join(d, n));
          const stats = await Promise.all(part.map((p) => fsp.lstat(p).catch(() => null)));
          part.forEach((p, j) => {
            const st = stats[j];
            if (st?.isFile()) out.push({ kind: 'maildir', path: p, mailbox: maildirName(dir, mdRoot ?? dir), bytes: st.size, mtimeMs: st.mtimeMs });
          });
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
  rejected: number;
  unreadable: number;
  retryLater: number;
  attachmentsUploaded: number;
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
}

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
  const sum: ImportSummary = { messages: 0, accepted: 0, duplicates: 0, unchanged: 0, rejected: 0, unreadable: 0, retryLater: 0, attachmentsUploaded: 0 };
  const policy = opts.redaction ?? storeRedaction({ module: opts.config.modules.mail.redact_pii, gatewayUrl: opts.config.gateway.base_url });
  const redaction = policy.options;
  const claims = new Map<string, string>(); // source_id -> text hash, this import
  const unchangedIds = new Set<string>(); // message keys of unchanged sources (not read)
  const window = new SubmitWindow(opts.concurrency ?? 2);
  const batchSize = opts.batchSize ?? 100;
  const manifest = opts.dryRun ? null : (opts.manifest ?? null);
  let batch: Pending[] = [];

  const settle = (src: SourceProgress) => {
    if (src.read && src.outstanding === 0 && !src.failed) manifest?.record(src.key, src.entry, src.submissionId);
  };
  const send = (items: Pending[]) =>
    window.add(async (onAnswered) => {
      const outs = await submitEmailBatch(opts.gateway, items.map((i) => i.item), {
        uploadAttachments: opts.attachments ?? true,
        maxAttachmentBytes: opts.config.modules.mail.max_attachment_bytes,
        onAnswered,
        uploadLimiter: window.uploads,
      });
      outs.forEach((out, i) => {
        const it = items[i];
        sum.attachmentsUploaded += out.attachmentsUploaded;
        it.coverage?.answered(it.location, out);
        if (out.status === 'accepted') {
          sum.accepted++;
          if (out.duplicate) sum.duplicates++;
          it.source.submissionId ??= out.submissionId;
          // Kept out by the block list: an unchanged source counts it skipped again without reading it.
          if (out.skipped) (it.source.entry.skipped ??= {})[it.index] = 'blocked';
        } else {
          if (out.status === 'rejected') sum.rejected++;
          else sum.retryLater++;
          it.source.failed = true;
          opts.onProblem?.(it.location, out.error ?? 'not accepted');
        }
        it.source.outstanding--;
        settle(it.source);
        opts.onMessage?.(sum, it.bytes);
      });
    });
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
      const n = known.ids.length;
      sum.messages += n;
      sum.accepted += n;
      sum.duplicates += n;
      sum.unchanged += n;
      for (const id of known.ids) unchangedIds.add(id);
      opts.onMessage?.(sum, s.bytes);
      continue;
    }
    const src: SourceProgress = { key, entry: { size: s.bytes, mtime: s.mtimeMs, ids: [], redaction: policy.label }, outstanding: 0, read: false, failed: false, submissionId: null };
    for await (const raw of readSource(s)) {
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
      batch.push({ item: { built, attachments: msg.attachments }, location: raw.location, bytes: raw.bytes.length, source: src, index: src.entry.ids.length - 1, coverage });
      if (batch.length >= batchSize) await flush();
    }
    src.read = true;
    settle(src);
  }
  await flush();
  await window.drain();
  if (stoppedAt >= 0) {
    for (const s of sources.slice(stoppedAt)) opts.coverage?.(s)?.pending(s.path, `not read: the import stopped at --limit ${opts.limit}`, 'not_reached');
  }
  return sum;
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

/**
 * True when the gateway still holds a submission the manifest recorded (GET /v1/ingest/{id}); a new or
 * emptied server answers 404 and the manifest is not trusted. An empty manifest needs no confirmation.
 */
export async function confirmManifest(manifest: MailManifest, target: ServerTarget): Promise<boolean> {
  if (manifest.size === 0) return true;
  const id = manifest.confirmations[0];
  if (!id) return false;
  try {
    const r = await fetch(`${target.url}/v1/ingest/${encodeURIComponent(id)}`, {
      headers: target.token ? { authorization: `Bearer ${target.token}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
    await r.body?.cancel();
    return r.ok;
  } catch {
    return false;
  }
}
