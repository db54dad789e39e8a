/**
 * `memex import mail PATH` — imports mbox files and Maildir folders (plus loose .eml/.emlx files) into the
 * gateway with the same §2.6 payload and idempotency as the local collector, for users off macOS.
 *
 * The gateway's idempotency makes a second import of the same mail a run of duplicates (nothing twice),
 * and a message that failed is simply sent again by the next import. A manifest (manifest.ts: per source
 * its size, mtime and Message-IDs, confirmed with the server before it is trusted) lets an unchanged
 * source be skipped without reading it, so re-importing an unchanged folder takes about as long as
 * listing it. Progress: a cli-progress bar on a TTY, plain lines (every 500 messages and at the end) otherwise.
 *
 * Server and token: the rule of every client verb (src/client/target.ts: --url / MEMEX_URL, --token / AUTH_TOKEN),
 * then an agent configuration file's gateway.base_url / gateway.auth_token, then DATA_DIR/auth-token.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { resolveServerTarget, type ServerTarget } from '../../../client/target.ts';
import { AgentConfigError, expandHome, loadAgentConfig, type AgentConfig } from '../../config.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../email/parse.ts';
import { createGatewayClient, type GatewayClient } from '../../gateway-client.ts';
import { readSmallFile } from '../../../util/fs.ts';
import { buildEmailDocument, disambiguatedSourceId } from './document.ts';
import { readMboxFile } from './mbox.ts';
import { parseCollectedMessage } from './message.ts';
import { MailManifest, defaultManifestPath, sourceKey, type ManifestEntry } from './manifest.ts';
import { submitEmailBatch, SubmitWindow, type BatchItem } from './submit.ts';
import { describeStoreRedaction, storeRedaction, type StoreRedaction } from './store-redaction.ts';
import { parsePolicyList, type RedactOptions } from '../../../privacy/policy.ts';
import { describeCounts, RunRecorder } from '../../../coverage/recorder.ts';
import { httpCoverageReporter } from '../../../coverage/reporter.ts';
import { UsageError } from '../../../util/errors.ts';

const USAGE = `usage: memex import mail PATH... [options]

Imports mbox files, Maildir folders and .eml/.emlx files into the memex gateway.

options:
  --url URL            server URL (default: MEMEX_URL, the agent config file, http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN        bearer token (default: AUTH_TOKEN, the agent config file, the file DATA_DIR/auth-token)
  --config FILE        agent configuration file (redaction settings, gateway defaults)
  --limit N            stop after N messages
  --concurrency N      batches in flight (default 2)
  --batch N            messages per POST /v1/ingest:batch (default 100, at most 1000)
  --state FILE         manifest of what was sent (default: MEMEX_MAIL_IMPORT_STATE, else
                       $XDG_STATE_HOME/memex/mail-import-state.json or ~/.local/state/memex/...)
  --rescan             read every source again, even the ones the manifest knows unchanged
  --no-attachments     do not upload attachments
  --redact[=LIST]      replace email addresses, phone numbers, account numbers and SSNs by markers in the
                       stored text (LIST: some of emails,phones,account_numbers,ssn; default all)
  --no-redact          store the text as written
                       (default: as written when the server is on this machine, else all redacted;
                       modules.mail.redact_pii in the agent config sets it too; docs/email-collectors.md)
  --dry-run            parse and build documents, send nothing
  -h, --help           this text`;

export interface ImportArgs {
  paths: string[];
  url?: string;
  /** Deprecated spelling of --url. */
  gateway?: string;
  token?: string;
  configPath?: string;
  limit: number | null;
  concurrency: number;
  batch: number;
  statePath?: string;
  rescan: boolean;
  attachments: boolean;
  /** --redact[=…] / --no-redact; undefined leaves it to the configuration and the server's address. */
  redact?: RedactOptions;
  dryRun: boolean;
  help: boolean;
}


export function parseImportArgs(argv: string[]): ImportArgs {
  const a: ImportArgs = { paths: [], limit: null, concurrency: 2, batch: 100, rescan: false, attachments: true, dryRun: false, help: false };
  const args = [...argv];
  if (args[0] === 'mail') args.shift();
  for (let i = 0; i < args.length; i++) {
    const x = args[i];
    const value = (name: string) => {
      const v = args[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`);
      return v;
    };
    // --redact takes an optional value, so only its `=` form carries one: `--redact ~/Maildir` is a path.
    if (x === '--redact' || x.startsWith('--redact=')) {
      try {
        a.redact = parsePolicyList(x === '--redact' ? 'all' : x.slice('--redact='.length));
      } catch (err) {
        throw new UsageError(`--redact: ${(err as Error).message}`);
      }
      continue;
    }
    if (x === '--no-redact') {
      a.redact = parsePolicyList('none');
      continue;
    }
    const eq = x.indexOf('=');
    if (x.startsWith('--') && eq > 0) {
      args.splice(i + 1, 0, x.slice(eq + 1));
      args[i] = x.slice(0, eq);
      i--;
      continue;
    }
    switch (x) {
      case '--url':
        a.url = value(x);
        break;
      case '--gateway':
        a.gateway = value(x);
        break;
      case '--token':
        a.token = value(x);
        break;
      case '--config':
        a.configPath = value(x);
        break;
      case '--limit': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1) throw new UsageError('--limit must be a positive integer');
        a.limit = n;
        break;
      }
      case '--concurrency': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1 || n > 32) throw new UsageError('--concurrency must be an integer between 1 and 32');
        a.concurrency = n;
        break;
      }
      case '--batch': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError('--batch must be an integer between 1 and 1000');
        a.batch = n;
        break;
      }
      case '--state':
        a.statePath = path.resolve(value(x));
        break;
      case '--rescan':
        a.rescan = true;
        break;
      case '--no-attachments':
        a.attachments = false;
        break;
      case '--dry-run':
        a.dryRun = true;
        break;
      case '-h':
      case '--help':
        a.help = true;
        break;
      default:
        if (x.startsWith('-')) throw new UsageError(`unknown option ${x}`);
        a.paths.push(x);
    }
  }
  return a;
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

/** Server URL and token: the client rule (src/client/target.ts), with an agent config file after the variables. */
export function resolveGatewayTarget(
  args: Pick<ImportArgs, 'url' | 'gateway' | 'token'>,
  config: AgentConfig,
  env: NodeJS.ProcessEnv,
  configFromFile: boolean,
  warn?: (message: string) => void,
): ServerTarget {
  const configured = configFromFile ? { url: config.gateway.base_url, token: config.gateway.auth_token, source: 'the agent config' } : undefined;
  return resolveServerTarget(args, env, warn, configured);
}

export async function runMailImport(
  argv: string[],
  io: { stdout?: NodeJS.WriteStream | { write(s: string): unknown; isTTY?: boolean }; stderr?: { write(s: string): unknown; isTTY?: boolean }; env?: NodeJS.ProcessEnv } = {},
): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  let args: ImportArgs;
  try {
    args = parseImportArgs(argv);
  } catch (err) {
    stderr.write(`memex import mail: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(USAGE + '\n');
    return 0;
  }
  if (args.paths.length === 0) {
    stderr.write(`memex import mail: PATH is required\n\n${USAGE}\n`);
    return 2;
  }
  let config: AgentConfig;
  let fromFile = false;
  let configFile: string | undefined;
  try {
    const loaded = loadAgentConfig({ configPath: args.configPath, env });
    config = loaded.config;
    fromFile = loaded.path !== undefined;
    configFile = loaded.path;
  } catch (err) {
    if (err instanceof AgentConfigError) {
      stderr.write(`memex import mail: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const sources: ImportSource[] = [];
  // Coverage: one source per PATH given, whatever it holds (docs/coverage.md).
  const recorders = new Map<ImportSource, RunRecorder>();
  const runs: RunRecorder[] = [];
  for (const p of args.paths) {
    try {
      const found = await discoverSources(p);
      sources.push(...found);
      const run = new RunRecorder({ collector: 'import_mail', source_type: 'email_local', source_account_id: null, source_ref: path.resolve(expandHome(p)) });
      runs.push(run);
      for (const s of found) if (!recorders.has(s)) recorders.set(s, run);
    } catch (err) {
      stderr.write(`memex import mail: cannot read ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
      return 2;
    }
  }
  if (sources.length === 0) {
    stderr.write(`memex import mail: no mbox file, Maildir or .eml/.emlx file found under ${args.paths.join(', ')}\n`);
    return 2;
  }
  let target: ServerTarget;
  try {
    target = resolveGatewayTarget(args, config, env, fromFile, (m) => stderr.write(`memex import mail: ${m}\n`));
  } catch (err) {
    stderr.write(`memex import mail: ${(err as Error).message}\n`);
    return 2;
  }
  const gateway = createGatewayClient({
    baseUrl: target.url,
    authToken: target.token,
    ingestPath: config.gateway.ingest_path,
    ingestFilePath: config.gateway.ingest_file_path,
    timeoutSeconds: config.gateway.timeout,
  });
  const manifest = args.dryRun ? null : await MailManifest.load(args.statePath ?? defaultManifestPath(env), target.url);
  if (manifest && (args.rescan || !(await confirmManifest(manifest, target)))) manifest.reset();
  const redaction = storeRedaction({ option: args.redact, module: config.modules.mail.redact_pii, gatewayUrl: target.url });
  // Said once: on the first import to this server, when the policy changes, and on a dry run.
  if (!manifest || manifest.lastRedaction !== redaction.label) stdout.write(`${describeStoreRedaction(redaction, target.url, configFile)}\n`);
  const totalBytes = sources.reduce((n, s) => n + s.bytes, 0);
  const tty = stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: 'mail import [{bar}] {percentage}% | {messages} messages | {accepted} new+dup | {problems} problems', stream: stderr as NodeJS.WriteStream, hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(Math.max(totalBytes, 1), 0, { messages: 0, accepted: 0, problems: 0 });
  let doneBytes = 0;
  let lastLine = 0;
  const problems: string[] = [];
  const summary = await importMail(sources, {
    gateway,
    config,
    limit: args.limit,
    concurrency: args.concurrency,
    batchSize: args.batch,
    attachments: args.attachments,
    dryRun: args.dryRun,
    redaction,
    manifest,
    onMessage(s, bytes) {
      doneBytes += bytes;
      const problemsN = s.rejected + s.unreadable + s.retryLater;
      if (bar) bar.update(Math.min(doneBytes, totalBytes), { messages: s.messages, accepted: s.accepted, problems: problemsN });
      else if (s.messages - lastLine >= 500) {
        lastLine = s.messages;
        stdout.write(`mail import: ${s.messages} messages read, ${s.accepted} accepted (${s.duplicates} duplicates), ${problemsN} problems\n`);
      }
    },
    onProblem(location, reason) {
      problems.push(`${location}: ${reason}`);
    },
    coverage: (s) => recorders.get(s),
  });
  bar?.stop();
  if (!args.dryRun) {
    const reporter = httpCoverageReporter({ url: target.url, token: target.token, log: { warn: (o) => stderr.write(`memex import mail: coverage not recorded: ${(o as { reason?: string }).reason}\n`) } });
    for (const run of runs) {
      await reporter.sendRun(run.report());
      stdout.write(`coverage of ${run.source.source_ref}: ${describeCounts(run.counts())}\n`);
    }
  }
  if (manifest) {
    try {
      await manifest.save(sources.length ? args.paths.map((p) => path.resolve(expandHome(p))) : [], redaction.label);
    } catch (err) {
      stderr.write(`memex import mail: cannot write the manifest ${manifest.file}: ${(err as Error).message}\n`);
    }
  }
  for (const p of problems.slice(0, 50)) stderr.write(`memex import mail: ${p}\n`);
  if (problems.length > 50) stderr.write(`memex import mail: … and ${problems.length - 50} more problems\n`);
  stdout.write(
    `mail import ${args.dryRun ? '(dry run) ' : ''}done: ${summary.messages} messages, ${summary.accepted - summary.duplicates} new, ${summary.duplicates} duplicates${summary.unchanged ? ` (${summary.unchanged} in unchanged files, not read)` : ''}, ` +
      `${summary.rejected} rejected, ${summary.retryLater} not reachable, ${summary.unreadable} unreadable, ${summary.attachmentsUploaded} attachments uploaded\n`,
  );
  return summary.rejected + summary.retryLater + summary.unreadable > 0 ? 1 : 0;
}
