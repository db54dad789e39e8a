/**
 * Watched Maildirs and mbox files (issue 41): `memex import mail --watch PATH` and the agent's sources of type
 * `maildir` and `mbox`. Each run is an import of the paths with the manifest (mail-import.ts, manifest.ts), so
 * what is unchanged is neither read nor sent: a run lists the folders, reads the new files (a message a mail
 * client or a delivery agent wrote into `new/` or `cur/`), and reads an mbox from its last message on when
 * messages were appended to it. A rename (new/ -> cur/, flag letters) is no new message. The watch itself is
 * a ChangeTrigger (../../sources/watch.ts): events on each Maildir's `cur/` and `new/` and on the folders holding the
 * mbox files, debounced, plus a periodic rescan.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expandHome, type AgentConfig } from '../../config.ts';
import type { GatewayClient } from '../../gateway-client.ts';
import type { CoverageReporter } from '../../../coverage/reporter.ts';
import { RunRecorder } from '../../../coverage/recorder.ts';
import { ChangeTrigger, type SourceWatcher, type WatchTarget } from '../../sources/watch.ts';
import { discoverSources, importMail, type ImportSource, type ImportSummary } from './mail-import.ts';
import type { MailManifest } from './manifest.ts';
import type { StoreRedaction } from './store-redaction.ts';

export interface MailWatchOptions {
  /** Maildirs, folders of Maildirs and mbox files, mbox files. */
  paths: string[];
  gateway: GatewayClient;
  config: AgentConfig;
  manifest: MailManifest;
  redaction: StoreRedaction;
  /** Coverage reports of runs that read something (and of the first). */
  coverage?: CoverageReporter;
  /** How coverage names the source (default import_mail / the path). */
  coverageSource?: { collector: 'import_mail' | 'email_local'; source_account_id: string | null };
  attachments?: boolean;
  /** After each run that read something: what it came to. */
  onRun?: (summary: ImportSummary, why: string) => void;
  onProblem?: (location: string, reason: string) => void;
  debounceMs?: number;
  rescanMs?: number;
  retryDelaysMs?: number[];
  log?: { warn(obj: object, msg?: string): void };
}

/** The folders whose entries tell of new mail under `root`: each Maildir's cur/ and new/, and every folder (new mbox files, new subfolders). */
export function mailWatchTargets(root: string): WatchTarget[] {
  const st = fs.statSync(root, { throwIfNoEntry: false });
  if (!st) return [];
  if (st.isFile()) {
    const base = path.basename(root);
    return [{ dir: path.dirname(root), match: (n) => n === base }];
  }
  const out: WatchTarget[] = [];
  const walk = (dir: string, depth: number) => {
    out.push({ dir });
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = path.join(dir, e.name);
      if (e.name === 'tmp') continue; // a message in tmp/ is still being written
      if (e.name === 'cur' || e.name === 'new') out.push({ dir: p });
      else if (depth < 8) walk(p, depth + 1);
    }
  };
  walk(root, 0);
  return out;
}

export function createMailWatcher(opts: MailWatchOptions): SourceWatcher {
  const roots = opts.paths.map((p) => path.resolve(expandHome(p)));
  let first = true;
  return new ChangeTrigger({
    name: `mail ${roots.join(', ')}`,
    debounceMs: opts.debounceMs,
    rescanMs: opts.rescanMs,
    log: opts.log,
    targets: () => roots.flatMap(mailWatchTargets),
    run: async (why) => {
      const sources: ImportSource[] = [];
      const recorders = new Map<ImportSource, RunRecorder>();
      const runs: RunRecorder[] = [];
      for (const root of roots) {
        let found: ImportSource[];
        try {
          found = await discoverSources(root);
        } catch (err) {
          throw new Error(`cannot read ${root}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
        const run = new RunRecorder({
          collector: opts.coverageSource?.collector ?? 'import_mail',
          source_type: 'email_local',
          source_account_id: opts.coverageSource?.source_account_id ?? null,
          source_ref: root,
        });
        runs.push(run);
        for (const s of found) {
          sources.push(s);
          recorders.set(s, run);
        }
      }
      const summary = await importMail(sources, {
        gateway: opts.gateway,
        config: opts.config,
        manifest: opts.manifest,
        redaction: opts.redaction,
        attachments: opts.attachments,
        retryDelaysMs: opts.retryDelaysMs,
        onProblem: opts.onProblem,
        coverage: (s) => recorders.get(s),
      });
      await opts.manifest.save(roots, opts.redaction.label);
      if (summary.sourcesRead > 0 || first) {
        if (opts.coverage) for (const run of runs) await opts.coverage.sendRun(run.report());
        opts.onRun?.(summary, why);
      }
      first = false;
      const failed = summary.rejected + summary.retryLater + summary.unreadable;
      if (summary.retryLater > 0) throw new Error(`${summary.retryLater} message(s) not answered by the gateway; sent again on the next run`);
      if (failed > 0) opts.log?.warn({ failed }, 'watched mail: some messages were not stored (see the problems)');
    },
  });
}
