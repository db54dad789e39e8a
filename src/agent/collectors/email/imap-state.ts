/**
 * What the IMAP collector knows of each account and folder, kept on disk (issue 41) so a restarted agent resumes
 * where it stopped and fetches no message it already stored: the folder's UIDVALIDITY, the highest UID it is done
 * with, HIGHESTMODSEQ where the server offers CONDSTORE, and per UID what became of it (its document's source id,
 * its flags). Next to the mail collector's run state: `<dir of modules.mail.state.run_state_path>/imap_state.json`.
 *
 * A UIDVALIDITY that differs from the one kept means the UIDs name other messages now: the folder's record starts
 * over and every message is examined again (the gateway answers those it holds as duplicates: nothing doubled).
 * Writes are atomic (temp file, fsync, rename): a SIGKILL leaves the previous or the new state, never half; what
 * happened since the last save is fetched again and answered as duplicates.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeJsonAtomic } from '../../../util/fs.ts';

/** What became of one UID: stored (or found stored already), a copy of another UID, kept out, or given up on. */
export type UidOutcome = 'stored' | 'duplicate' | 'blocked' | 'skipped';

export interface UidEntry {
  /** Outcome. */
  k: UidOutcome;
  /** The document's source_id at the gateway (null when nothing was stored). */
  s: string | null;
  /** IMAP flags as last seen (\Seen, \Flagged, \Answered, …). */
  f: string[];
}

export interface ImapFolderState {
  uidvalidity: string;
  /** Every UID up to this one is done with (stored, skipped or given up on). */
  uid_max: number;
  /** HIGHESTMODSEQ at the last sync (CONDSTORE), as a decimal string; null without CONDSTORE. */
  highestmodseq: string | null;
  uids: Record<string, UidEntry>;
  /** Date (INTERNALDATE) of the newest message stored. */
  newest_stored: string | null;
  last_success_at: string | null;
}

interface StateFile {
  version: 1;
  folders: Record<string, ImapFolderState>;
}

export const folderKey = (account: string, folder: string) => `${account}\u0000${folder}`;

export function imapStatePath(runStatePath: string): string {
  return path.join(path.dirname(runStatePath), 'imap_state.json');
}

export class ImapStateStore {
  private data: StateFile;
  private dirty = false;
  private lastSave = 0;

  constructor(readonly file: string) {
    this.data = { version: 1, folders: {} };
    let text: string | null = null;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (text !== null) {
      try {
        const raw = JSON.parse(text) as Partial<StateFile>;
        if (raw && typeof raw.folders === 'object' && raw.folders) this.data.folders = raw.folders;
      } catch {
        // Kept aside, never silently overwritten: the worst case is examining every message again (duplicates).
        fs.renameSync(file, `${file}.corrupt-${Date.now()}`);
      }
    }
  }

  get(account: string, folder: string): ImapFolderState | undefined {
    return this.data.folders[folderKey(account, folder)];
  }

  /** The folder's state for this UIDVALIDITY: the kept one, or a new one (the previous, if any, is returned too). */
  open(account: string, folder: string, uidvalidity: string): { state: ImapFolderState; replaced: ImapFolderState | null } {
    const key = folderKey(account, folder);
    const cur = this.data.folders[key];
    if (cur && cur.uidvalidity === uidvalidity) return { state: cur, replaced: null };
    const state: ImapFolderState = { uidvalidity, uid_max: 0, highestmodseq: null, uids: {}, newest_stored: cur?.newest_stored ?? null, last_success_at: cur?.last_success_at ?? null };
    this.data.folders[key] = state;
    this.dirty = true;
    return { state, replaced: cur ?? null };
  }

  touch(): void {
    this.dirty = true;
  }

  /** Saves when changed; with `pace`, at most every 2 s (a crash re-examines what came since: duplicates). */
  save(pace = false): void {
    if (!this.dirty) return;
    if (pace && Date.now() - this.lastSave < 2000) return;
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    writeJsonAtomic(this.file, this.data);
    this.dirty = false;
    this.lastSave = Date.now();
  }
}
