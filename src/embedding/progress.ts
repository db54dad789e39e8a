/**
 * Progress for long embedding runs (`memex reindex`, bench): a cli-progress bar with rate and ETA
 * on a terminal, plain timestamped lines otherwise (logs, CI).
 */
import { createRequire } from 'node:module';
import type { Database } from '../db/types.ts';
import { embeddingStatus } from './ops.ts';

const require = createRequire(import.meta.url);

export interface Progress {
  update(done: number, total?: number): void;
  stop(): void;
}

export interface ProgressOptions {
  label: string;
  total: number;
  stream?: NodeJS.WriteStream | NodeJS.WritableStream;
  /** Plain mode: at most one line per this many ms (default 5000). */
  lineEveryMs?: number;
  /** Force plain lines even on a TTY. */
  plain?: boolean;
}

export function formatDuration(s: number | undefined): string {
  if (s === undefined || !Number.isFinite(s)) return '?';
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
}

export function createProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  const isTty = !opts.plain && (stream as NodeJS.WriteStream).isTTY === true;
  const t0 = Date.now();
  let total = opts.total;
  if (isTty) {
    const cliProgress = require('cli-progress');
    const bar = new cliProgress.SingleBar(
      {
        stream,
        format: `${opts.label} [{bar}] {percentage}% | {value}/{total} | {rate}/s | ETA {eta_formatted}`,
        etaBuffer: 50,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { rate: '0.0' });
    return {
      update(done, t) {
        if (t !== undefined && t !== total) { total = t; bar.setTotal(t); }
        const secs = (Date.now() - t0) / 1000;
        bar.update(done, { rate: secs > 0 ? (done / secs).toFixed(1) : '0.0' });
      },
      stop() { bar.stop(); },
    };
  }
  const every = opts.lineEveryMs ?? 5000;
  let last = 0;
  let lastDone = 0;
  const line = (done: number) => {
    const secs = (Date.now() - t0) / 1000;
    const rate = secs > 0 ? done / secs : 0;
    const pct = total > 0 ? ((100 * done) / total).toFixed(1) : '100.0';
    const eta = rate > 0 ? (total - done) / rate : undefined;
    stream.write(`${new Date().toISOString()} ${opts.label}: ${done}/${total} (${pct}%) ${rate.toFixed(1)}/s ETA ${formatDuration(eta)}\n`);
  };
  return {
    update(done, t) {
      if (t !== undefined) total = t;
      lastDone = done;
      if (Date.now() - last >= every) { last = Date.now(); line(done); }
    },
    stop() { line(lastDone); },
  };
}

/**
 * Shows the embedding queue draining until nothing is pending or processing (or the signal aborts).
 * Total = the chunks waiting when it starts plus any that arrive meanwhile.
 */
export async function watchEmbeddingQueue(
  db: Database,
  opts: { intervalMs?: number; signal?: AbortSignal; stream?: NodeJS.WritableStream; plain?: boolean } = {},
): Promise<void> {
  await watchQueue(async () => (await embeddingStatus(db)).chunks, opts);
}

type ChunkCounts = { pending: number; processing: number; embedded: number; failed: number };

/** watchEmbeddingQueue over any reader of the chunk counts (the database, or a server's GET /v1/status). */
export async function watchQueue(
  read: () => Promise<ChunkCounts>,
  opts: { intervalMs?: number; signal?: AbortSignal; stream?: NodeJS.WritableStream; plain?: boolean } = {},
): Promise<void> {
  const first = await read();
  const start = first.embedded + first.failed;
  let total = first.pending + first.processing;
  const p = createProgress({ label: 'embedding', total, stream: opts.stream, plain: opts.plain });
  try {
    for (;;) {
      const c = await read();
      const done = Math.max(0, c.embedded + c.failed - start);
      total = Math.max(total, done + c.pending + c.processing);
      p.update(done, total);
      if (c.pending + c.processing === 0 || opts.signal?.aborted) break;
      await new Promise((r) => setTimeout(r, opts.intervalMs ?? 1000));
    }
  } finally {
    p.stop();
  }
}
