/**
 * What a CalDAV/CardDAV module knows of each source's collections between runs (issue 42), on disk so a restarted
 * agent asks only for what changed: the sync-token and CTag of each collection, and per member its ETag and the
 * ids of the documents made of it (to retire them when the member goes). One file per module
 * (`modules.<name>.state_path`); written atomically after each collection's changes were accepted by the gateway,
 * so a SIGKILL costs at most that collection's changes being asked for again (answered as unchanged).
 */
import fs from 'node:fs';
import { writeJsonAtomic } from '../../../util/fs.ts';
import type { KeptCollection } from './collections.ts';

interface StateFile {
  version: 1;
  /** By source id, then collection URL. */
  sources: Record<string, Record<string, KeptCollection>>;
}

export class DavStateStore {
  private data: StateFile = { version: 1, sources: {} };

  constructor(readonly file: string) {
    let text: string | null = null;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (text === null) return;
    try {
      const parsed = JSON.parse(text) as StateFile;
      if (parsed?.version === 1 && parsed.sources && typeof parsed.sources === 'object') this.data = parsed;
    } catch {
      // An unreadable state file: start over (every member is fetched again and answered as unchanged).
    }
  }

  collection(sourceId: string, url: string): KeptCollection | undefined {
    return this.data.sources[sourceId]?.[url];
  }

  collections(sourceId: string): Record<string, KeptCollection> {
    return this.data.sources[sourceId] ?? {};
  }

  /** Records a collection and writes the file. */
  save(sourceId: string, url: string, kept: KeptCollection): void {
    (this.data.sources[sourceId] ??= {})[url] = kept;
    writeJsonAtomic(this.file, this.data);
  }

  /** Forgets a collection (it left the server or the configuration) and writes the file. */
  drop(sourceId: string, url: string): void {
    if (!this.data.sources[sourceId]?.[url]) return;
    delete this.data.sources[sourceId][url];
    writeJsonAtomic(this.file, this.data);
  }
}
