/**
 * Persistent state of the fswatch module: the watches (API-created ones survive restarts) and one record
 * per submitted file (content hash, gateway doc_id, size, mtime), which is the hash tracker that keeps an
 * unchanged file from ever being resubmitted and lets a deletion soft-delete the right document.
 *
 * One JSON file written atomically (temp + fsync + rename). File records change for every file, so their
 * saves are coalesced (at most one write per `flushMs`); watch changes are written at once, before the
 * API answers. Losing the last records in a crash only means the startup rescan resubmits those files,
 * which the gateway answers as duplicates (same idempotency key) with the same doc_id.
 */
import fs from 'node:fs';
import { writeJsonAtomic } from '../chatapp/document.ts';

export interface WatchEntry {
  id: string;
  /** Real absolute path of the watched folder. */
  path: string;
  glob: string;
  target: 'gateway';
  handoff: 'presigned' | 'inline';
  origin: 'api' | 'config';
  created_at: string;
}

export interface FileRecord {
  watch_id: string;
  /** SHA-256 (hex) of the content last handled; null when the file was skipped before reading. */
  sha256: string | null;
  size: number;
  mtime_ms: number;
  /** Gateway document of the latest accepted version. */
  doc_id?: string;
  version_number?: number;
  submitted_at?: string;
  /** Why the current content was not submitted (too large, no text, rejected by the gateway). */
  skipped?: string;
  /** The export this file was handed to (its importer's path: the file, or the export's folder), src/agent/collectors/fswatch/exports.ts. */
  export?: string;
}

interface StateFile {
  version: 1;
  watches: WatchEntry[];
  files: Record<string, FileRecord>;
}

export class FsWatchStore {
  watches = new Map<string, WatchEntry>();
  files = new Map<string, FileRecord>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly file: string,
    private readonly flushMs = 250,
  ) {}

  /** Reads the state file; a missing or unreadable one starts empty (the rescan rebuilds the records). */
  load(): { error?: string } {
    let raw: Partial<StateFile>;
    try {
      raw = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Partial<StateFile>;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return code === 'ENOENT' ? {} : { error: `cannot read ${this.file}: ${(err as Error).message}` };
    }
    for (const w of Array.isArray(raw.watches) ? raw.watches : []) {
      if (w && typeof w.id === 'string' && typeof w.path === 'string' && typeof w.glob === 'string') this.watches.set(w.id, w);
    }
    for (const [p, r] of Object.entries(raw.files && typeof raw.files === 'object' ? raw.files : {})) {
      if (r && typeof r === 'object' && typeof r.watch_id === 'string') this.files.set(p, r);
    }
    return {};
  }

  /** Writes now (watch changes; shutdown). */
  saveNow(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const data: StateFile = {
      version: 1,
      watches: [...this.watches.values()].filter((w) => w.origin === 'api'),
      files: Object.fromEntries(this.files),
    };
    writeJsonAtomic(this.file, data);
  }

  /** Coalesced write for file records. */
  saveSoon(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      try {
        this.saveNow();
      } catch {
        // Next save retries; the records are still in memory.
      }
    }, this.flushMs);
    this.timer.unref?.();
  }
}
