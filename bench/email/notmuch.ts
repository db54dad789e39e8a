/**
 * notmuch as the reference for conversation grouping: indexes a Maildir in a scratch database and
 * returns the message ids of each thread it finds. Used by bench/email/peer.ts and the threading test.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export function hasNotmuch(): boolean {
  return spawnSync('notmuch', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Writes a notmuch configuration for `maildir` under `stateDir` and returns its path. */
export function notmuchConfig(maildir: string, stateDir: string): string {
  fs.mkdirSync(stateDir, { recursive: true });
  const cfg = path.join(stateDir, 'notmuch-config');
  fs.writeFileSync(cfg, `[database]\npath=${maildir}\n[new]\ntags=\n[maildir]\nsynchronize_flags=false\n`);
  return cfg;
}

interface ShownMessage {
  id: string;
}
type ShownNode = [ShownMessage, ShownNode[]];

/** `notmuch new` then every thread's message ids (sorted, threads sorted by their first id). */
export function notmuchThreads(maildir: string, stateDir: string): string[][] {
  const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, stateDir) };
  execFileSync('notmuch', ['new', '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const out = execFileSync('notmuch', ['show', '--format=json', '--body=false', '--entire-thread=true', '*'], {
    env,
    maxBuffer: 1 << 30,
  }).toString('utf8');
  const threads = JSON.parse(out) as ShownNode[][];
  const groups = threads.map((t) => {
    const ids: string[] = [];
    const visit = (nodes: ShownNode[]) => {
      for (const [m, replies] of nodes) {
        ids.push(m.id);
        visit(replies);
      }
    };
    visit(t);
    return ids.sort();
  });
  return groups.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}
