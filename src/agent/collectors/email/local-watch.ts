/**
 * A watched Mail.app `.emlx` tree (issue 41; docs/sources.md): a `type: local` mail source without a schedule runs
 * by itself when its tree changes. The run is the collector's own (local.ts, the run of `POST
 * /v1/collectors/email_local:run`), so the two never overlap and a run reads only what changed (unchanged files are
 * known by size and mtime). The watch is a WatchedSource (../../sources/watched.ts): events on every folder of the
 * tree — Mail.app writes `Mailboxes/…/Messages/N.emlx`, and a new mailbox is a new folder — debounced into one run,
 * with a rescan as the safety net.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expandHome } from '../../config.ts';
import type { MailSourceConfig } from '../../config-schema.ts';
import type { RunOutcomeFacts } from '../../sources/scheduled.ts';
import { WatchedSource } from '../../sources/watched.ts';
import type { WatchTarget } from '../../sources/watch.ts';
import { CollectorHttpError, MAX_LIMIT, type LocalEmailCollector } from './local.ts';

/** Mail.app's own index (MailData/Envelope Index and its -wal) changes all the time and holds no message. */
const SKIP_DIRS = new Set(['MailData']);

/** Entries whose change may mean mail: `.emlx` files, `.mbox` folders, and folders (Messages, Data, 1, UUIDs). */
export function emlxEntryMatters(name: string): boolean {
  if (/\.emlx$/i.test(name) || /\.mbox$/i.test(name)) return true;
  return !name.includes('.') && !name.startsWith('Envelope Index');
}

/** Every folder of the tree at `root` (a missing root: its nearest existing parent, to see it appear). */
export function emlxWatchTargets(root: string, maxDepth = 12): WatchTarget[] {
  const st = fs.statSync(root, { throwIfNoEntry: false });
  if (!st) {
    const parent = path.dirname(root);
    if (parent === root) return [];
    const base = path.basename(root);
    return fs.existsSync(parent) ? [{ dir: parent, match: (n) => n === base }] : [];
  }
  if (st.isFile()) {
    const base = path.basename(root);
    return [{ dir: path.dirname(root), match: (n) => n === base }];
  }
  const out: WatchTarget[] = [];
  const walk = (dir: string, depth: number) => {
    out.push({ dir, match: emlxEntryMatters });
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory() && !SKIP_DIRS.has(e.name) && depth < maxDepth) walk(path.join(dir, e.name), depth + 1);
  };
  walk(root, 0);
  return out;
}

export interface LocalWatchOptions {
  source: MailSourceConfig & { source_path: string };
  collector: LocalEmailCollector;
  /** The source's coverage identity's source_ref: the folder with its links resolved. */
  sourceRef: string;
  log?: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  debounceMs?: number;
  rescanMs?: number;
}

export function watchedLocalSource(opts: LocalWatchOptions): WatchedSource {
  const { source, collector } = opts;
  const root = path.resolve(expandHome(source.source_path));
  return new WatchedSource({
    identity: { collector: 'email_local', source_type: 'email_local', source_account_id: source.id, source_ref: opts.sourceRef },
    label: `local ${source.id}`,
    targets: () => emlxWatchTargets(root),
    debounceMs: opts.debounceMs,
    rescanMs: opts.rescanMs,
    log: opts.log,
    // No folder, no access, outside the mail roots: a person has to act.
    permanent: (err) => err instanceof CollectorHttpError && [400, 403, 404].includes(err.status),
    run: async (): Promise<RunOutcomeFacts> => {
      for (;;) {
        let result;
        try {
          result = await collector.run({ mode: 'simulate', simulate_path: source.source_path, limit: MAX_LIMIT }, { quiet: true });
        } catch (err) {
          // A tree without a message yet is no failure of a watched source: it waits for the first.
          if (err instanceof CollectorHttpError && err.status === 404 && fs.existsSync(root)) return { detail: { messages: 0 } };
          throw err;
        }
        const s = result.stats;
        if (s.documents_retry_later > 0) throw new Error(`${s.documents_retry_later} message(s) not answered by the gateway; sent again on the next try`);
        // A tree larger than one run's limit: the next run goes on where this one stopped.
        if (s.messages_processed + s.errors_encountered < MAX_LIMIT) return { detail: { messages: s.files_found, rejected: s.documents_rejected, unreadable: s.errors_encountered } };
      }
    },
  });
}
