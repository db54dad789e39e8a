/**
 * `memex ingest PATH...`: uploads files (or every supported file under folders) to a running server's
 * POST /v1/ingest/file, with a progress bar, and skips files that did not change since the last run.
 *
 * Unchanged = the server confirms it holds this file: the state file remembers, per server instance (its
 * `instance_id`: a new data directory or database is a new instance), each file's size, mtime and SHA-256. Size and
 * mtime equal to the recorded ones are taken as "same hash" without reading the file again (like rsync and git); any
 * difference re-hashes, so a touched but identical file is still a candidate. Candidates are then confirmed with
 * POST /v1/ingest/file/known (same path and bytes as an active document) before they are skipped; anything the
 * server does not hold is uploaded. An upload the server already has answers 200 duplicate, also counted unchanged.
 */
import { createHash } from 'node:crypto';
import { createReadStream, openAsBlob } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createServerClient } from '../client/server.ts';
import { CLIENT_SETTINGS } from '../client/target.ts';
import { read } from '../config/env.ts';
import { UsageError } from '../util/errors.ts';
import type { ProgressBar } from './progress.ts';
import { pathOf } from '../client/call.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

/** Extensions the server extracts text from (docs/files.md); others are not uploaded. */
export const SUPPORTED_EXTENSIONS = new Set([
  'pdf', 'png', 'jpg', 'jpeg', 'webp', 'bmp', 'gif', 'tif', 'tiff', 'pbm', 'pgm', 'ppm', 'pnm',
  'txt', 'text', 'md', 'markdown', 'csv', 'tsv', 'log', 'json', 'html', 'htm', 'xhtml',
]);

const USAGE = `usage: memex ingest [options] PATH...

Uploads files, and every supported file under folders, to the memex server (POST /v1/ingest/file).
Supported: ${[...SUPPORTED_EXTENSIONS].join(', ')}, and files without an extension (README, NEWS) whose
content is text, PDF or an image. Hidden files and folders are skipped unless --all. What is skipped is
listed with the reason.

options:
  --url URL          server URL (default: env MEMEX_URL, else http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN      bearer token (default: env AUTH_TOKEN, else the file DATA_DIR/auth-token)
  --tag TAG          tag stored with every file (repeatable)
  --state FILE       state file remembering uploaded files (default: env MEMEX_INGEST_STATE,
                     else $XDG_STATE_HOME/memex/ingest-state.json or ~/.local/state/memex/ingest-state.json)
  --concurrency N    uploads at once (default 2)
  --all              include hidden files and folders
  --no-progress      plain lines even on a terminal
  -h, --help         this text

Exit status: 0 when every file was uploaded or unchanged, 1 when some failed, 2 on usage errors.`;

interface StateEntry {
  sha256: string;
  size: number;
  mtimeMs: number;
  doc_id?: string;
}
interface StateFile {
  version: 2;
  /** Keyed by the server's instance id. */
  servers: Record<string, { url: string; files: Record<string, StateEntry> }>;
}

export interface IngestSummary {
  uploaded: string[];
  unchanged: string[];
  extractionFailed: string[];
  failed: { path: string; reason: string }[];
}

interface Options {
  gateway: string;
  token: string | undefined;
  tags: string[];
  statePath: string;
  concurrency: number;
  all: boolean;
  /** The progress bar on a terminal, else null: a line per file. */
  bar: ProgressBar | null;
}


function defaultStatePath(env: NodeJS.ProcessEnv): string {
  const configured = read(env, CLIENT_SETTINGS.MEMEX_INGEST_STATE);
  if (configured) return configured;
  const base = env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'memex', 'ingest-state.json');
}

/** Bytes read from a file without an extension to tell what it is. */
const SNIFF_BYTES = 8192;

/**
 * Why a file met in a folder is not uploaded, or null when it is. A supported extension is enough; a file without
 * one (README, NEWS, LICENSE) is read from its first bytes with the server's own type detection (src/files/detect.ts,
 * loaded only then: it brings the image libraries) and taken when it is text, PDF or an image.
 */
async function skipReason(file: string): Promise<string | null> {
  const ext = path.extname(file).slice(1).toLowerCase();
  if (SUPPORTED_EXTENSIONS.has(ext)) return null;
  if (ext) return `unsupported type .${ext}`;
  let head: Buffer;
  try {
    const handle = await fs.open(file, 'r');
    try {
      const buf = Buffer.alloc(SNIFF_BYTES);
      const { bytesRead } = await handle.read(buf, 0, SNIFF_BYTES, 0);
      head = buf.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch (e) {
    return `unreadable: ${(e as Error).message}`;
  }
  if (head.length === 0) return 'empty file';
  const { detectType } = await import('../files/detect.ts');
  const kind = detectType(head, path.basename(file)).kind;
  return kind === 'binary' ? 'no extension, and the content is not text, PDF or an image' : null;
}

export interface CollectedFiles {
  files: string[];
  missing: { path: string; reason: string }[];
  /** Files and hidden folders met under the folders given and left out, with the reason. */
  skipped: { path: string; reason: string }[];
}

/**
 * Files to upload, sorted. Folders are walked without following symbolic links (no loops, no escaping the tree);
 * a file named on the command line is taken whatever its extension.
 */
export async function collectFiles(paths: string[], all = false): Promise<CollectedFiles> {
  const files = new Set<string>();
  const missing: { path: string; reason: string }[] = [];
  const skipped: { path: string; reason: string }[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      missing.push({ path: dir, reason: (e as Error).message });
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (!all && e.name.startsWith('.')) {
        skipped.push({ path: p, reason: `hidden ${e.isDirectory() ? 'folder' : 'file'} (--all includes it)` });
        continue;
      }
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const reason = await skipReason(p);
        if (reason) skipped.push({ path: p, reason });
        else files.add(p);
      } else if (!e.isSymbolicLink()) skipped.push({ path: p, reason: 'not a regular file' });
      else skipped.push({ path: p, reason: 'symbolic link (not followed)' });
    }
  };
  for (const raw of paths) {
    const p = path.resolve(raw);
    let st;
    try {
      st = await fs.stat(p);
    } catch (e) {
      missing.push({ path: raw, reason: (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or folder' : (e as Error).message });
      continue;
    }
    if (st.isDirectory()) await walk(p);
    else if (st.isFile()) files.add(p);
    else missing.push({ path: raw, reason: 'not a regular file or folder' });
  }
  skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { files: [...files].sort(), missing, skipped };
}

async function loadState(file: string): Promise<StateFile> {
  try {
    const s = JSON.parse(await fs.readFile(file, 'utf8')) as StateFile;
    if (s && s.version === 2 && s.servers && typeof s.servers === 'object') return s;
  } catch {
    /* absent or unreadable: start fresh (the server's duplicate answer still prevents double documents) */
  }
  // Version 1 (keyed by URL, never confirmed) is dropped: the server decides again.
  return { version: 2, servers: {} };
}

const KNOWN_BATCH = 1000;

/**
 * Asks the server which of these files it holds (POST /v1/ingest/file/known), in batches. Returns its instance id
 * and the confirmed paths, or null when the server cannot answer (an older server: then nothing is skipped).
 */
async function confirmKnown(
  opts: Options,
  candidates: { path: string; sha256: string }[],
): Promise<{ instanceId: string; known: Set<string> } | null> {
  const client = createServerClient({ url: opts.gateway, token: opts.token, tokenSource: opts.token ? 'token' : 'none' });
  let instanceId: string | undefined;
  const known = new Set<string>();
  for (let i = 0; i === 0 || i < candidates.length; i += KNOWN_BATCH) {
    const batch = candidates.slice(i, i + KNOWN_BATCH).map((c) => ({ source: 'localfs', path: c.path, sha256: c.sha256 }));
    let res: { instance_id: string; known: { path: string; sha256: string }[] };
    try {
      res = await client.call('knownFiles', { body: { files: batch } });
    } catch {
      return null;
    }
    if (instanceId && res.instance_id !== instanceId) return null; // the server changed under us: trust nothing
    instanceId = res.instance_id;
    for (const k of res.known) known.add(`${k.path}\0${k.sha256}`);
  }
  return { instanceId: instanceId!, known };
}

async function saveState(file: string, state: StateFile): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, JSON.stringify(state), { mode: 0o600 });
  await fs.rename(tmp, file);
}

async function hashFile(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface UploadAnswer {
  status: number;
  body: Record<string, any> | null;
  retryAfterMs?: number;
}

async function uploadOnce(opts: Options, file: string, meta: Record<string, unknown>): Promise<UploadAnswer> {
  const form = new FormData();
  form.append('meta', JSON.stringify(meta));
  // openAsBlob: a file-backed Blob, streamed by fetch (the file is never read whole into memory).
  const blob = await openAsBlob(file);
  form.append('upload', blob, path.basename(file));
  const res = await fetch(`${opts.gateway}${pathOf('ingestFile')}`, {
    method: 'POST',
    headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
    body: form,
  });
  let body: Record<string, any> | null = null;
  try {
    body = (await res.json()) as Record<string, any>;
  } catch {
    body = null;
  }
  const ra = Number(res.headers.get('retry-after'));
  return { status: res.status, body, retryAfterMs: Number.isFinite(ra) && ra > 0 ? Math.min(ra, 30) * 1000 : undefined };
}

function reasonOf(a: UploadAnswer): string {
  const d = a.body?.detail;
  if (typeof d === 'string') return `HTTP ${a.status}: ${d}`;
  if (Array.isArray(d)) return `HTTP ${a.status}: ${d.map((i) => `${(i.loc ?? []).join('.')}: ${i.msg}`).join('; ')}`;
  return `HTTP ${a.status}`;
}

type Outcome =
  | { kind: 'uploaded'; extractionFailed: boolean; entry: StateEntry }
  | { kind: 'unchanged'; entry?: StateEntry }
  | { kind: 'failed'; reason: string };

/** SHA-256 of a file, taken from its state entry when size and mtime are unchanged. */
async function currentHash(file: string, prev: StateEntry | undefined): Promise<{ sha256: string; size: number; mtimeMs: number }> {
  const st = await fs.stat(file);
  if (prev && prev.size === st.size && prev.mtimeMs === st.mtimeMs) return { sha256: prev.sha256, size: st.size, mtimeMs: st.mtimeMs };
  return { sha256: await hashFile(file), size: st.size, mtimeMs: st.mtimeMs };
}

async function processFile(
  opts: Options,
  file: string,
  prev: StateEntry | undefined,
  confirmed: (file: string, sha256: string) => boolean,
  hashed?: { sha256: string; size: number; mtimeMs: number },
): Promise<Outcome> {
  const { sha256, size, mtimeMs } = hashed ?? (await currentHash(file, undefined));
  const st = { size, mtimeMs };
  if (confirmed(file, sha256)) return { kind: 'unchanged', entry: { ...prev, sha256, size, mtimeMs } };
  const meta = {
    source: 'localfs',
    path: file,
    filename: path.basename(file),
    mtime: st.mtimeMs / 1000,
    ...(opts.tags.length ? { tags: opts.tags } : {}),
    sha256,
    size: st.size,
  };
  let answer: UploadAnswer | undefined;
  for (let attempt = 1; attempt <= 4; attempt++) {
    try {
      answer = await uploadOnce(opts, file, meta);
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      answer = { status: 0, body: { detail: `cannot reach ${opts.gateway}: ${cause?.code ?? cause?.message ?? (e as Error).message}` } };
    }
    const retry = answer.status === 0 || answer.status === 429 || answer.status === 503;
    if (!retry || attempt === 4) break;
    await sleep(answer.retryAfterMs ?? 500 * 2 ** (attempt - 1));
  }
  const a = answer!;
  const entry: StateEntry = { sha256, size: st.size, mtimeMs: st.mtimeMs, doc_id: a.body?.doc_id };
  if (a.status === 202) return { kind: 'uploaded', extractionFailed: a.body?.extraction_status === 'failed', entry };
  if (a.status === 200) return { kind: 'unchanged', entry };
  if (a.status === 0) return { kind: 'failed', reason: String(a.body?.detail) };
  return { kind: 'failed', reason: reasonOf(a) };
}

interface Progress {
  tick(file: string, label: string): void;
  stop(): void;
}

function makeProgress(bar: ProgressBar | null, total: number, out: NodeJS.WritableStream): Progress {
  if (bar) {
    bar.start(total, 0, { file: '' });
    return {
      tick: (file) => bar.increment(1, { file: path.basename(file).slice(0, 40) }),
      stop: () => bar.stop(),
    };
  }
  let n = 0;
  return {
    tick: (file, label) => out.write(`[${++n}/${total}] ${label} ${file}\n`),
    stop: () => {},
  };
}

/** Uploads the files; the state file is written after every few files and at the end. */
export async function ingestFiles(
  opts: Options,
  files: string[],
  io: { out: NodeJS.WritableStream } = { out: process.stderr },
): Promise<IngestSummary> {
  const state = await loadState(opts.statePath);
  // Which server is this? Its section of the state names the candidates for "unchanged"; the server confirms them.
  const hello = await confirmKnown(opts, []);
  const section = hello ? (state.servers[hello.instanceId] ??= { url: opts.gateway, files: {} }) : { url: opts.gateway, files: {} };
  section.url = opts.gateway;
  const hashes = new Map<string, { sha256: string; size: number; mtimeMs: number }>();
  const candidates: { path: string; sha256: string }[] = [];
  for (const file of files) {
    const prev = section.files[file];
    if (!prev) continue;
    try {
      const h = await currentHash(file, prev);
      hashes.set(file, h);
      if (h.sha256 === prev.sha256) candidates.push({ path: file, sha256: h.sha256 });
    } catch {
      /* unreadable now: processFile reports it */
    }
  }
  const answer = hello && candidates.length ? await confirmKnown(opts, candidates) : hello;
  const trusted = answer && hello && answer.instanceId === hello.instanceId ? answer.known : new Set<string>();
  const confirmed = (file: string, sha256: string) => trusted.has(`${file}\0${sha256}`);
  const summary: IngestSummary = { uploaded: [], unchanged: [], extractionFailed: [], failed: [] };
  const progress = makeProgress(opts.bar, files.length, io.out);
  let next = 0;
  let sinceSave = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++];
      let o: Outcome;
      try {
        o = await processFile(opts, file, section.files[file], confirmed, hashes.get(file));
      } catch (e) {
        o = { kind: 'failed', reason: (e as Error).message };
      }
      const key = file;
      if (o.kind === 'uploaded') {
        section.files[key] = o.entry;
        summary.uploaded.push(file);
        if (o.extractionFailed) summary.extractionFailed.push(file);
      } else if (o.kind === 'unchanged') {
        if (o.entry) section.files[key] = o.entry;
        summary.unchanged.push(file);
      } else {
        summary.failed.push({ path: file, reason: o.reason });
      }
      progress.tick(file, o.kind === 'uploaded' ? (o.extractionFailed ? 'new (no text)' : 'new') : o.kind);
      if (++sinceSave >= 20) {
        sinceSave = 0;
        await saveState(opts.statePath, state);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, files.length) }, worker));
  } finally {
    progress.stop();
    await saveState(opts.statePath, state);
  }
  return summary;
}

/** Skipped files listed one per line up to this many; beyond it, counts per reason. */
const SKIPPED_LISTED = 50;

function printSummary(s: IngestSummary, collected: CollectedFiles, out: NodeJS.WritableStream): void {
  const { missing, skipped } = collected;
  out.write(
    `\nnew: ${s.uploaded.length}${s.extractionFailed.length ? ` (${s.extractionFailed.length} stored without text)` : ''}, ` +
      `unchanged: ${s.unchanged.length}, skipped: ${skipped.length}, failed: ${s.failed.length + missing.length}\n`,
  );
  for (const f of s.extractionFailed) out.write(`  no text extracted: ${f}\n`);
  for (const f of skipped.slice(0, SKIPPED_LISTED)) out.write(`  skipped: ${f.path}: ${f.reason}\n`);
  if (skipped.length > SKIPPED_LISTED) {
    const byReason = new Map<string, number>();
    for (const f of skipped.slice(SKIPPED_LISTED)) byReason.set(f.reason, (byReason.get(f.reason) ?? 0) + 1);
    for (const [reason, n] of byReason) out.write(`  skipped: ${n} more: ${reason}\n`);
  }
  for (const f of [...missing, ...s.failed]) out.write(`  failed: ${f.path}: ${f.reason}\n`);
}

/** A skip of collectFiles as coverage counts it (docs/coverage.md). */
function skipKind(reason: string): 'excluded' | 'unsupported' | 'empty' | 'failed' {
  if (reason.startsWith('unreadable')) return 'failed';
  if (reason === 'empty file') return 'empty';
  if (reason.startsWith('unsupported type') || reason.startsWith('no extension')) return 'unsupported';
  return 'excluded'; // hidden, not a regular file, a symbolic link: left out by design
}

/**
 * One coverage run per folder given (docs/coverage.md): every file met under it ends stored (uploaded: new;
 * unchanged), skipped (hidden files and links excluded, unsupported types, empty files) or failed (refused,
 * unreadable). A single file named on the command line is not a source of its own. Never fails the command.
 */
async function reportCoverage(
  opts: Options,
  paths: string[],
  collected: CollectedFiles,
  summary: IngestSummary,
  started: Date,
  err: NodeJS.WritableStream,
): Promise<void> {
  const { RunRecorder } = await import('../coverage/recorder.ts');
  const { httpCoverageReporter } = await import('../coverage/reporter.ts');
  const reporter = httpCoverageReporter({ url: opts.gateway, token: opts.token, timeoutMs: 15_000, log: { warn: (o) => err.write(`memex ingest: coverage not recorded (${(o as { reason?: string }).reason ?? 'error'})\n`) } });
  const failed = new Map(summary.failed.map((f) => [f.path, f.reason]));
  const uploaded = new Set(summary.uploaded);
  const unchanged = new Set(summary.unchanged);
  for (const raw of new Set(paths.map((p) => path.resolve(p)))) {
    const st = await fs.stat(raw).catch(() => null);
    if (!st?.isDirectory()) continue;
    const under = (p: string) => p.startsWith(raw + path.sep);
    const rec = new RunRecorder({ collector: 'ingest', source_type: 'localfs', source_account_id: null, source_ref: raw });
    (rec as { startedAt: Date }).startedAt = started;
    for (const f of collected.files.filter(under)) {
      if (uploaded.has(f)) rec.stored(f, 'new');
      else if (unchanged.has(f)) rec.stored(f, 'unchanged');
      else if (failed.has(f)) rec.failed(f, failed.get(f)!, 'rejected');
      else rec.pending(f, 'not handled by this run', 'not_reached');
    }
    for (const s of collected.skipped.filter((x) => under(x.path))) {
      const kind = skipKind(s.reason);
      if (kind === 'failed') rec.failed(s.path, s.reason, 'unreadable');
      else rec.skipped(s.path, kind, s.reason);
    }
    for (const m of collected.missing.filter((x) => under(path.resolve(x.path)))) rec.failed(m.path, `unreadable folder: ${m.reason}`, 'unreadable');
    await reporter.sendRun(rec.report({ cursor: { files: collected.files.filter(under).length } }));
  }
}

export const INGEST = defineVerb({
  name: 'ingest',
  help: `  ingest PATH...                      upload files and folders to the running server (docs/files.md)`,
  usage: USAGE,
  server: true,
  progress: true,
  positionals: 'any',
  options: {
    tag: { kind: 'list', description: 'tag stored with every file (repeatable)' },
    state: { kind: 'string', description: 'state file remembering uploaded files' },
    concurrency: { kind: 'number', min: 1, max: 16, default: 2, description: 'uploads at once' },
    all: { kind: 'boolean', description: 'include hidden files and folders' },
    'no-progress': { kind: 'boolean', description: 'plain lines even on a terminal' },
  },
  async run({ args: paths, values, target, env, out, err, progress }) {
    if (paths.length === 0) throw new UsageError('no PATH given');
    const opts: Options = {
      gateway: target.url,
      token: target.token,
      tags: values.tag,
      statePath: values.state ? path.resolve(values.state) : defaultStatePath(env),
      concurrency: values.concurrency,
      all: values.all,
      bar: progress('ingest [{bar}] {value}/{total} {file}', { hideCursor: true }),
    };
    if (!opts.token) err.write('memex ingest: no token (set AUTH_TOKEN, --token, or DATA_DIR/auth-token); trying without\n');
    const started = new Date();
    const collected = await collectFiles(paths, opts.all);
    const summary = await ingestFiles(opts, collected.files, { out: (opts.bar ? err : out) as NodeJS.WritableStream });
    printSummary(summary, collected, out as NodeJS.WritableStream);
    await reportCoverage(opts, paths, collected, summary, started, err as NodeJS.WritableStream);
    return summary.failed.length || collected.missing.length ? 1 : 0;
  },
});

/** The `memex ingest` verb. Returns the exit status. */
export const runIngestCommand = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(INGEST, argv, io);
