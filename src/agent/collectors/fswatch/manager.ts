/**
 * Watches folders and keeps their files in sync with the gateway as `localfs` documents.
 *
 * - chokidar 4 reports add/change/unlink; each path is debounced (debounce_ms) and then handled by a
 *   small worker pool, never two workers on the same path.
 * - A file is read, hashed (SHA-256) and compared with its record: unchanged content is never sent again
 *   (a size+mtime match skips even the read). New content is extracted (src/files/extract.ts: text,
 *   Markdown, HTML, JSON, PDF, images through the shared OCR engine) and POSTed to <ingest_path> with
 *   source_id = external_id = `localfs:<absolute path>`, so a change is a new version of the same
 *   document. The doc_id of the answer is remembered.
 * - A deleted file soft-deletes its document (DELETE /v1/catalog/documents/{doc_id}); a rename is a
 *   deletion of the old path plus a new file.
 * - Start-up (and queue overflow) rescans walk each watched folder: new or changed files are sent, files
 *   recorded but gone are deleted. That catches everything that happened while the agent was down.
 * - Gateway trouble (down, 429/503 after retries, 5xx, 401/403) leaves the record as it was and retries
 *   the path later with a growing delay; a 4xx rejection of one document is recorded with the content
 *   hash, so that version is not retried until the file changes.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { extractText, type OcrFunction } from '../../../files/extract.ts';
import { GatewayHttpError, type GatewayClient } from '../../gateway-client.ts';
import { globMatches } from './glob.ts';
import { isUnder } from './paths.ts';
import { FsWatchStore, type FileRecord, type WatchEntry } from './store.ts';
import { RunRecorder } from '../../../coverage/recorder.ts';
import type { SourceIdentity } from '../../../coverage/identity.ts';
import type { Census } from '../../../coverage/reconcile.ts';
import type { CoverageReporter } from '../../../coverage/reporter.ts';
import { ExportRuns, type ExportClaim, type ExportHandoff } from './exports.ts';

/** The coverage source of a watch: its folder (docs/coverage.md). */
export function fswatchCoverageSource(folder: string): SourceIdentity {
  return { collector: 'fswatch', source_type: 'localfs', source_account_id: null, source_ref: folder };
}

export interface FsEvent {
  at: string;
  type: 'submitted' | 'unchanged' | 'deleted' | 'skipped' | 'rejected' | 'error' | 'rescan' | 'imported';
  watch_id: string;
  path?: string;
  detail?: string;
}

export interface FsWatchStats {
  watches: number;
  files_tracked: number;
  submitted: number;
  unchanged: number;
  deleted: number;
  skipped: number;
  rejected: number;
  errors: number;
  pending: number;
}

export interface DeleteDocumentFn {
  (docId: string): Promise<'deleted' | 'gone'>;
}

export interface FsWatchManagerOptions {
  statePath: string;
  gateway: GatewayClient;
  deleteDocument: DeleteDocumentFn;
  debounceMs: number;
  maxFileBytes: number;
  /** Paths waiting for a worker beyond this trigger a rescan of their watch instead of growing the queue. */
  queueSize: number;
  ocr?: OcrFunction;
  concurrency?: number;
  log: { warn(obj: object, msg?: string): void; info(obj: object, msg?: string): void };
  /** Retry delays for gateway failures, ms (default 2 s doubling to 60 s). */
  retryBaseMs?: number;
  /** Where each rescan's coverage report goes (docs/coverage.md). */
  coverage?: CoverageReporter;
  /** Takes the files of exports (chats, vaults, browser history, Takeout) to their importers (exports.ts). */
  exports?: ExportHandoff;
}

/** Hidden files, editor swap/backup and temp files are never documents (spec-notes B9 exclude list). */
export function ignoredName(name: string): boolean {
  return name.startsWith('.') || name.startsWith('~') || name.endsWith('~') || /\.(tmp|swp|swx|part|crdownload)$/i.test(name);
}

const MAX_EVENTS = 500;

export class FsWatchManager {
  readonly store: FsWatchStore;
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** path -> watch id, in arrival order. */
  private readonly pending = new Map<string, string>();
  private readonly inFlight = new Set<string>();
  private readonly rescans: string[] = [];
  private readonly retries = new Map<string, number>();
  private readonly events: FsEvent[] = [];
  private readonly counters = { submitted: 0, unchanged: 0, deleted: 0, skipped: 0, rejected: 0, errors: 0 };
  private workers = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  private readonly exportRuns: ExportRuns | null;

  constructor(private readonly opts: FsWatchManagerOptions) {
    this.store = new FsWatchStore(opts.statePath);
    const { error } = this.store.load();
    if (error) opts.log.warn({ error }, 'fswatch state unreadable; starting empty (the rescan rebuilds it)');
    this.exportRuns = opts.exports
      ? new ExportRuns({
          handoff: opts.exports,
          debounceMs: Math.max(opts.debounceMs, 500),
          retryBaseMs: opts.retryBaseMs ?? 2000,
          onRun: (claim, watchId, result) => {
            const detail =
              'error' in result
                ? `${claim.kind} ${claim.root}: ${result.error}`
                : `${claim.kind} ${claim.root}: exit ${result.code}: ${result.output.trim().split('\n').filter(Boolean).slice(0, 3).join(' / ').slice(0, 500)}`;
            this.event({ type: 'imported', watch_id: watchId, path: claim.root, detail });
            if ('error' in result || result.code !== 0) this.opts.log.warn({ watch_id: watchId, export: claim.root, detail }, 'fswatch export import');
          },
          onFailed: (claim) => {
            // Not imported: its files are handed over again by the next event or rescan.
            for (const [p, r] of this.store.files) if (r.export === claim.root) this.store.files.set(p, { ...r, sha256: null });
            this.store.saveSoon();
          },
        })
      : null;
  }

  // -------------------------------------------------------------------------------------------
  // Watches

  list(): WatchEntry[] {
    return [...this.store.watches.values()];
  }

  /** Adds (and persists, unless from config) a watch, starts it and queues its initial scan. */
  add(w: WatchEntry): void {
    this.store.watches.set(w.id, w);
    if (w.origin === 'api') this.store.saveNow();
    this.startWatch(w);
  }

  /** Stops and forgets a watch. Its documents stay in the gateway; its file records are dropped. */
  async remove(id: string): Promise<boolean> {
    const w = this.store.watches.get(id);
    if (!w) return false;
    this.store.watches.delete(id);
    await this.watchers.get(id)?.close();
    this.watchers.delete(id);
    for (const [p, wid] of this.pending) if (wid === id) this.pending.delete(p);
    for (const [p, r] of this.store.files) if (r.watch_id === id) this.store.files.delete(p);
    this.store.saveNow();
    return true;
  }

  /** Starts every stored watch (agent start). */
  startAll(): void {
    for (const w of this.store.watches.values()) this.startWatch(w);
  }

  private startWatch(w: WatchEntry): void {
    if (this.closed || this.watchers.has(w.id)) return;
    const watcher = watch(w.path, {
      ignoreInitial: true, // our own rescan handles existing files (and deletions while down)
      followSymlinks: false,
      persistent: true,
      ignored: (p: string) => {
        const rel = path.relative(w.path, p);
        return rel !== '' && rel.split(path.sep).some(ignoredName);
      },
    });
    const onFile = (p: string) => this.schedule(p, w.id);
    watcher.on('add', onFile).on('change', onFile).on('unlink', onFile);
    watcher.on('unlinkDir', (dir: string) => {
      for (const [p, r] of this.store.files) if (r.watch_id === w.id && isUnder(p, dir)) this.schedule(p, w.id);
    });
    watcher.on('error', (err: unknown) => {
      this.event({ type: 'error', watch_id: w.id, detail: `watcher: ${(err as Error).message}` });
      // Events may have been lost: a rescan reconciles.
      this.queueRescan(w.id);
    });
    this.watchers.set(w.id, watcher);
    // The first scan waits for the watcher to be ready: a file made after the walk but before chokidar watched
    // its folder would otherwise be seen by neither (until the next rescan).
    watcher.once('ready', () => this.queueRescan(w.id));
  }

  // -------------------------------------------------------------------------------------------
  // Queue

  private schedule(p: string, watchId: string, delay = this.opts.debounceMs): void {
    if (this.closed) return;
    const t = this.timers.get(p);
    if (t) clearTimeout(t);
    this.timers.set(
      p,
      setTimeout(() => {
        this.timers.delete(p);
        this.enqueue(p, watchId);
      }, delay),
    );
  }

  private enqueue(p: string, watchId: string): void {
    if (this.closed || !this.store.watches.has(watchId)) return;
    if (!this.pending.has(p) && this.pending.size >= this.opts.queueSize) {
      // Bounded memory: past the queue size the folder is reconciled by a rescan instead.
      this.queueRescan(watchId);
      return;
    }
    this.pending.delete(p); // re-insert at the end: latest event wins
    this.pending.set(p, watchId);
    this.pump();
  }

  private queueRescan(watchId: string): void {
    if (!this.rescans.includes(watchId)) this.rescans.push(watchId);
    this.pump();
  }

  private pump(): void {
    const max = this.opts.concurrency ?? 4;
    while (!this.closed && this.workers < max && (this.takeable() || (this.rescans.length > 0 && this.workers === 0))) {
      this.workers++;
      void this.work().finally(() => {
        this.workers--;
        if (this.workers === 0 && this.pending.size === 0 && this.rescans.length === 0 && this.timers.size === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const w of waiters) w();
        } else this.pump();
      });
    }
  }

  private takeable(): boolean {
    for (const p of this.pending.keys()) if (!this.inFlight.has(p)) return true;
    return false;
  }

  private async work(): Promise<void> {
    while (!this.closed) {
      let next: [string, string] | undefined;
      for (const e of this.pending) {
        if (!this.inFlight.has(e[0])) {
          next = e;
          break;
        }
      }
      if (next) {
        this.pending.delete(next[0]);
        this.inFlight.add(next[0]);
        try {
          await this.handle(next[0], next[1]);
        } catch (err) {
          this.counters.errors++;
          this.event({ type: 'error', watch_id: next[1], path: next[0], detail: (err as Error).message });
        } finally {
          this.inFlight.delete(next[0]);
        }
        continue;
      }
      const rescan = this.rescans.shift();
      if (rescan === undefined) return;
      await this.rescan(rescan).catch((err) => {
        this.counters.errors++;
        this.event({ type: 'error', watch_id: rescan, detail: `rescan: ${(err as Error).message}` });
      });
    }
  }

  /** Resolves when nothing is pending, debouncing, in flight or being rescanned (tests, shutdown). */
  whenIdle(): Promise<void> {
    if (this.workers === 0 && this.pending.size === 0 && this.rescans.length === 0 && this.timers.size === 0) {
      // Imports of exports handed over count too (they may be debouncing still).
      return this.exportRuns && !this.exportRuns.idle() ? this.exportRuns.whenIdle().then(() => this.whenIdle()) : Promise.resolve();
    }
    return new Promise((r) => this.idleWaiters.push(() => void this.whenIdle().then(r)));
  }

  // -------------------------------------------------------------------------------------------
  // Rescan

  /** Walks the folder: every matching file is handled (unchanged ones cost a stat), records of files that
   * are gone become deletions. */
  private async rescan(watchId: string): Promise<void> {
    const w = this.store.watches.get(watchId);
    if (!w) return;
    const seen = new Set<string>();
    const started = new Date();
    const thrown = new Map<string, string>();
    const walk = async (dir: string): Promise<void> => {
      let entries: fs.Dirent[];
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        return; // vanished or unreadable: its files count as gone below only if the root itself is gone
      }
      for (const e of entries) {
        if (this.closed || !this.store.watches.has(watchId)) return;
        if (ignoredName(e.name)) continue;
        const p = path.join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && this.matches(w, p)) {
          seen.add(p);
          if (this.inFlight.has(p)) continue;
          this.inFlight.add(p);
          try {
            await this.handle(p, watchId, true);
          } catch (err) {
            this.counters.errors++;
            thrown.set(p, (err as NodeJS.ErrnoException).code ?? (err as Error).message);
            this.event({ type: 'error', watch_id: watchId, path: p, detail: (err as Error).message });
          } finally {
            this.inFlight.delete(p);
          }
        }
      }
    };
    if (!fs.existsSync(w.path)) {
      this.event({ type: 'error', watch_id: watchId, detail: 'watched folder is missing; documents kept' });
      return;
    }
    await walk(w.path);
    if (this.closed || !this.store.watches.has(watchId)) return;
    for (const [p, r] of this.store.files) {
      if (r.watch_id === watchId && !seen.has(p) && !this.inFlight.has(p)) this.enqueue(p, watchId);
    }
    this.event({ type: 'rescan', watch_id: watchId, detail: `${seen.size} files` });
    if (this.opts.coverage) {
      const report = this.coverageOf(w, seen, thrown, started).report({ cursor: { files: seen.size, glob: w.glob } });
      await this.opts.coverage.sendRun(report);
    }
  }

  /**
   * What a rescan found (docs/coverage.md): every matching file in one state, from its record. Stored (new or
   * updated by this rescan, else unchanged); skipped too large, with no text (empty) or whose text cannot be
   * extracted (unsupported); refused by the gateway or unreadable (failed); waiting for a retry after the
   * gateway did not answer (pending).
   */
  private coverageOf(w: WatchEntry, seen: Set<string>, thrown: Map<string, string>, started: Date): RunRecorder {
    const rec = new RunRecorder(fswatchCoverageSource(w.path));
    for (const p of seen) {
      const r = this.store.files.get(p);
      const error = thrown.get(p);
      if (error) rec.failed(p, `unreadable: ${error}`, 'unreadable');
      else if (this.retries.has(p) || !r) rec.pending(p, 'the gateway did not accept it yet; retried with a growing delay', 'gateway_unavailable');
      else if (r.skipped === 'too_large') rec.skipped(p, 'too_large', `larger than max_file_bytes (${this.opts.maxFileBytes})`);
      else if (r.skipped === 'no text' || /\bno text\b/.test(r.skipped ?? '')) rec.skipped(p, 'empty', 'no text in the file');
      else if (r.skipped?.startsWith('extraction failed')) rec.skipped(p, 'unsupported', r.skipped);
      else if (r.skipped?.startsWith('rejected')) rec.failed(p, r.skipped, 'rejected');
      else if (r.skipped) rec.failed(p, r.skipped);
      else if (r.submitted_at && Date.parse(r.submitted_at) >= started.getTime()) rec.stored(p, (r.version_number ?? 1) > 1 ? 'updated' : 'new');
      else rec.stored(p, 'unchanged');
    }
    return rec;
  }

  /** Recount of a watched folder (nothing submitted): matching files, and how many changed since `since`. */
  async census(folder: string, since: Date | null): Promise<Census> {
    const watches = [...this.store.watches.values()].filter((w) => w.path === folder);
    if (!watches.length) throw new Error(`no watch of ${folder}`);
    if (!fs.existsSync(folder)) throw new Error(`the watched folder ${folder} is missing`);
    let files = 0;
    let changed = 0;
    const walk = async (dir: string): Promise<void> => {
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => [] as fs.Dirent[]);
      for (const e of entries) {
        if (ignoredName(e.name)) continue;
        const p = path.join(dir, e.name);
        if (e.isDirectory()) await walk(p);
        else if (e.isFile() && watches.some((w) => this.matches(w, p))) {
          files++;
          if (since && (await fsp.stat(p).catch(() => null))?.mtimeMs! >= since.getTime()) changed++;
        }
      }
    };
    await walk(folder);
    return { in_source: files, changed: since ? changed : null, facts: { files } };
  }

  /**
   * Retry (docs/coverage.md): files refused by the gateway or whose text could not be extracted are read and
   * sent again by a rescan of the folder (their records no longer answer for them); waiting ones are retried now.
   */
  retryFailed(folder: string): number {
    let n = 0;
    for (const w of this.store.watches.values()) {
      if (w.path !== folder) continue;
      for (const [p, r] of this.store.files) {
        if (r.watch_id === w.id && (r.skipped?.startsWith('rejected') || r.skipped?.startsWith('extraction failed'))) {
          this.store.files.set(p, { ...r, sha256: null, skipped: undefined });
          n++;
        }
      }
      this.queueRescan(w.id);
    }
    return n;
  }

  private matches(w: WatchEntry, p: string): boolean {
    const rel = path.relative(w.path, p).split(path.sep).join('/');
    return globMatches(w.glob, rel);
  }

  // -------------------------------------------------------------------------------------------
  // One path

  /**
   * `trustStat`: a record with the same size and mtime counts as unchanged without reading the file.
   * Only the rescan trusts it (thousands of files at boot); a watcher event always reads and hashes,
   * since a filesystem with coarse timestamps can change content within the same mtime and size.
   */
  private async handle(p: string, watchId: string, trustStat = false): Promise<void> {
    const w = this.store.watches.get(watchId);
    if (!w) return;
    let st: fs.Stats;
    try {
      st = await fsp.lstat(p);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return this.gone(p, watchId);
      throw err;
    }
    if (!st.isFile()) {
      // A symlink or special file: never followed. If a document existed for this path, it is gone.
      if (this.store.files.has(p)) return this.gone(p, watchId);
      return;
    }
    if (!this.matches(w, p) || path.relative(w.path, p).split(path.sep).some(ignoredName)) return;
    const rec = this.store.files.get(p);
    if (trustStat && rec && rec.size === st.size && rec.mtime_ms === st.mtimeMs && (rec.sha256 !== null || rec.skipped)) {
      this.counters.unchanged++;
      return;
    }
    const claim = this.opts.exports ? await this.opts.exports.claim(p, w.path).catch(() => null) : null;
    if (claim) return this.handOff(p, watchId, claim, st, rec);
    if (st.size > this.opts.maxFileBytes) {
      this.record(p, { ...rec, watch_id: watchId, sha256: null, size: st.size, mtime_ms: st.mtimeMs, skipped: 'too_large' });
      this.counters.skipped++;
      this.event({ type: 'skipped', watch_id: watchId, path: p, detail: `larger than max_file_bytes (${this.opts.maxFileBytes})` });
      return;
    }
    const buf = await fsp.readFile(p);
    const sha = crypto.createHash('sha256').update(buf).digest('hex');
    if (rec && rec.sha256 === sha) {
      this.record(p, { ...rec, size: st.size, mtime_ms: st.mtimeMs });
      this.counters.unchanged++;
      this.event({ type: 'unchanged', watch_id: watchId, path: p });
      return;
    }
    const filename = path.basename(p);
    const ex = await extractText({ buffer: buf, filename }, { ocr: this.opts.ocr, limits: { maxBytes: this.opts.maxFileBytes } });
    const text = ex.text?.trim() ?? '';
    if (ex.status !== 'ready' || text === '') {
      const why = ex.status !== 'ready' ? `extraction failed: ${ex.error ?? 'unknown'}` : 'no text';
      this.record(p, { ...rec, watch_id: watchId, sha256: sha, size: st.size, mtime_ms: st.mtimeMs, skipped: why });
      this.counters.skipped++;
      this.event({ type: 'skipped', watch_id: watchId, path: p, detail: why });
      return;
    }
    const doc = {
      source_type: 'localfs',
      source_id: `localfs:${p}`,
      external_id: `localfs:${p}`,
      source_provider: 'localfs',
      title: filename,
      canonical_uri: `file://${encodeURI(p)}`,
      content: { mime_type: 'text/plain', data: text },
      content_timestamp: st.mtime.toISOString(),
      content_timestamp_type: 'modified',
      // No watch id or mtime here: the same content from a re-created watch or a touched file is the
      // same submission (the gateway's idempotency key covers the metadata).
      metadata: {
        source: 'localfs',
        path: p,
        filename,
        size_bytes: st.size,
        sha256: sha,
        mime_type: ex.detected.mimeType,
        extraction: { method: ex.method, status: ex.status, ...(ex.truncated ? { truncated: true } : {}), ...(ex.pages ? { pages: ex.pages } : {}) },
        ...(ex.ocr ? { ocr: { confidence: ex.ocr.confidence ?? null, language: ex.ocr.language ?? null } } : {}),
      },
    };
    let res;
    try {
      res = await this.opts.gateway.submitDocument<{ doc_id?: string; version_number?: number; duplicate?: boolean }>(doc);
    } catch (err) {
      return this.failed(p, watchId, err, rec, { sha, size: st.size, mtime: st.mtimeMs });
    }
    this.retries.delete(p);
    this.record(p, {
      watch_id: watchId,
      sha256: sha,
      size: st.size,
      mtime_ms: st.mtimeMs,
      doc_id: res.body?.doc_id ?? rec?.doc_id,
      version_number: res.body?.version_number,
      submitted_at: new Date().toISOString(),
    });
    this.counters.submitted++;
    this.event({ type: 'submitted', watch_id: watchId, path: p, detail: res.body?.duplicate ? 'duplicate' : `version ${res.body?.version_number ?? '?'}` });
  }

  /**
   * A file of an export: its import runs (debounced, with the other files of the export) instead of a `localfs`
   * document. Recorded with its hash, so an unchanged file does not start the import again.
   */
  private async handOff(p: string, watchId: string, claim: ExportClaim, st: fs.Stats, rec: FileRecord | undefined): Promise<void> {
    const hash = crypto.createHash('sha256');
    for await (const chunk of fs.createReadStream(p)) hash.update(chunk as Buffer);
    const sha = hash.digest('hex');
    if (rec && rec.sha256 === sha && rec.export === claim.root) {
      this.record(p, { ...rec, size: st.size, mtime_ms: st.mtimeMs });
      this.counters.unchanged++;
      this.event({ type: 'unchanged', watch_id: watchId, path: p });
      return;
    }
    this.record(p, { watch_id: watchId, sha256: sha, size: st.size, mtime_ms: st.mtimeMs, submitted_at: new Date().toISOString(), export: claim.root });
    this.counters.submitted++;
    this.event({ type: 'submitted', watch_id: watchId, path: p, detail: `to the import of the ${claim.kind} ${claim.root}` });
    this.exportRuns!.schedule(claim, watchId);
  }

  /** The file no longer exists: soft-delete its document and forget it. */
  private async gone(p: string, watchId: string): Promise<void> {
    const rec = this.store.files.get(p);
    if (!rec) return;
    if (rec.doc_id) {
      try {
        await this.opts.deleteDocument(rec.doc_id);
      } catch (err) {
        return this.failed(p, watchId, err, rec, null);
      }
    }
    this.retries.delete(p);
    this.store.files.delete(p);
    this.store.saveSoon();
    this.counters.deleted++;
    this.event({ type: 'deleted', watch_id: watchId, path: p });
  }

  private failed(p: string, watchId: string, err: unknown, rec: FileRecord | undefined, content: { sha: string; size: number; mtime: number } | null): void {
    const status = err instanceof GatewayHttpError ? err.status : 0;
    const transient = !(err instanceof GatewayHttpError) || status === -1 || status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
    if (!transient && content) {
      // This version will never be accepted: remember its hash so it is not resent until the file changes.
      this.record(p, { ...rec, watch_id: watchId, sha256: content.sha, size: content.size, mtime_ms: content.mtime, skipped: `rejected by the gateway (${status})` });
      this.counters.rejected++;
      this.event({ type: 'rejected', watch_id: watchId, path: p, detail: `gateway answered ${status}` });
      return;
    }
    if (!transient && !content && status === 404) {
      // The document is already gone.
      this.store.files.delete(p);
      this.store.saveSoon();
      return;
    }
    this.counters.errors++;
    const n = (this.retries.get(p) ?? 0) + 1;
    this.retries.set(p, n);
    const delay = Math.min(60_000, (this.opts.retryBaseMs ?? 2000) * 2 ** (n - 1));
    this.event({ type: 'error', watch_id: watchId, path: p, detail: `${(err as Error).message}; retry in ${Math.round(delay / 1000)} s` });
    this.schedule(p, watchId, delay);
  }

  private record(p: string, r: FileRecord): void {
    const clean: FileRecord = { watch_id: r.watch_id, sha256: r.sha256, size: r.size, mtime_ms: r.mtime_ms };
    if (r.doc_id) clean.doc_id = r.doc_id;
    if (r.version_number !== undefined) clean.version_number = r.version_number;
    if (r.submitted_at) clean.submitted_at = r.submitted_at;
    if (r.skipped) clean.skipped = r.skipped;
    if (r.export) clean.export = r.export;
    this.store.files.set(p, clean);
    this.store.saveSoon();
  }

  // -------------------------------------------------------------------------------------------
  // Reporting and shutdown

  private event(e: Omit<FsEvent, 'at'>): void {
    this.events.push({ at: new Date().toISOString(), ...e });
    if (this.events.length > MAX_EVENTS) this.events.splice(0, this.events.length - MAX_EVENTS);
    if (e.type === 'error' || e.type === 'rejected') this.opts.log.warn({ watch_id: e.watch_id, path: e.path, detail: e.detail }, 'fswatch');
  }

  recentEvents(limit = 100): FsEvent[] {
    return this.events.slice(-limit);
  }

  stats(): FsWatchStats {
    return {
      watches: this.store.watches.size,
      files_tracked: this.store.files.size,
      ...this.counters,
      pending: this.pending.size + this.timers.size + this.inFlight.size + (this.exportRuns?.pending() ?? 0),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await Promise.all([...this.watchers.values()].map((w) => w.close().catch(() => {})));
    this.watchers.clear();
    // Let in-flight work finish (bounded) so a record is not lost for a document just accepted.
    const deadline = Date.now() + 10_000;
    while (this.workers > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (this.exportRuns) await Promise.race([this.exportRuns.close(), new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())))]);
    try {
      this.store.saveNow();
    } catch (err) {
      this.opts.log.warn({ error: (err as Error).message }, 'fswatch state could not be saved');
    }
  }
}
