/**
 * The verbs' progress bar (`memex ingest`, `memex import mail`, `memex export`): one cli-progress bar in the
 * classic shades, on a terminal only. Elsewhere there is none (null) and the verb writes plain lines instead: a
 * log keeps lines, not a bar redrawn in place. cli-progress is loaded only when a bar is drawn.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export interface ProgressBar {
  start(total: number, value: number, payload?: Record<string, unknown>): void;
  update(value: number, payload?: Record<string, unknown>): void;
  increment(n: number, payload?: Record<string, unknown>): void;
  stop(): void;
}

/**
 * A bar drawn on `stream` with cli-progress's `format` ({bar}, {value}, {total}, {percentage} and the
 * payload's names); null unless `show` (default: `stream` is a terminal).
 */
export function progressBar(
  format: string,
  stream: NodeJS.WritableStream & { isTTY?: boolean },
  opts: { show?: boolean; hideCursor?: boolean } = {},
): ProgressBar | null {
  if (!(opts.show ?? stream.isTTY === true)) return null;
  const cliProgress = require('cli-progress') as {
    SingleBar: new (o: Record<string, unknown>, preset: unknown) => ProgressBar;
    Presets: { shades_classic: unknown };
  };
  return new cliProgress.SingleBar({ format, stream, ...(opts.hideCursor ? { hideCursor: true } : {}) }, cliProgress.Presets.shades_classic);
}
