/**
 * Where the server's log lines go and how they look. pino writes one JSON object per line; on a terminal those are
 * turned into one readable line each (`08:53:12 INFO  GET /v1/search 200 12 ms`), elsewhere (a file, journald, a
 * log shipper) they stay JSON. LOG_FORMAT=json|pretty overrides the guess.
 *
 * Requests are logged once, when answered (method, path without the query string, status, duration); health checks
 * and metrics scrapes at debug, so a monitor polling every few seconds does not fill the log (src/gateway/app.ts).
 */
import { Writable } from 'node:stream';

export type LogFormat = 'json' | 'pretty';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 10: '\x1b[90m', 20: '\x1b[90m', 30: '\x1b[32m', 40: '\x1b[33m', 50: '\x1b[31m', 60: '\x1b[35m' };
/** Fields every pino line has, or that the pretty line shows in its own place. */
const SHOWN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'req', 'res', 'reqId', 'responseTime', 'method', 'url', 'status', 'ms']);

/** A value for `key=value`: bare when it is a plain word or number, quoted otherwise. */
function fieldValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /^[\w.:/@+-]*$/.test(s) && s !== '' ? s : JSON.stringify(s);
}

/** One pino JSON line as a readable line; lines that are not pino's JSON pass through unchanged. */
export function prettyLine(json: string, colour = false): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  if (!o || typeof o !== 'object' || typeof o.level !== 'number') return json;
  const time = typeof o.time === 'number' ? new Date(o.time).toTimeString().slice(0, 8) : '--:--:--';
  const level = (LEVELS[o.level] ?? String(o.level)).padEnd(5);
  const parts: string[] = [];
  if (typeof o.method === 'string' && typeof o.url === 'string') {
    parts.push(`${o.method} ${o.url}`, String(o.status ?? ''), typeof o.ms === 'number' ? `${Math.round(o.ms)} ms` : '');
  } else if (typeof o.msg === 'string') parts.push(o.msg);
  const err = o.err as { message?: string; type?: string } | undefined;
  for (const [k, v] of Object.entries(o)) {
    if (SHOWN.has(k) || v === undefined) continue;
    if (k === 'err' && err) parts.push(`err=${fieldValue(`${err.type ? `${err.type}: ` : ''}${err.message ?? ''}`)}`);
    else parts.push(`${k}=${fieldValue(v)}`);
  }
  const text = parts.filter(Boolean).join(' ');
  return colour ? `\x1b[90m${time}\x1b[0m ${COLOURS[o.level] ?? ''}${level}\x1b[0m ${text}` : `${time} ${level} ${text}`;
}

/** A stream that takes pino's JSON lines and writes readable ones to `out`. */
export function prettyStream(out: NodeJS.WritableStream & { isTTY?: boolean }): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer | string, _enc, done) {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line) out.write(`${prettyLine(line, out.isTTY === true)}\n`);
      done();
    },
    final(done) {
      if (rest) out.write(`${prettyLine(rest, out.isTTY === true)}\n`);
      done();
    },
  });
}

/**
 * The stream pino should write to: `out` itself for JSON, a pretty-printing stream in front of it otherwise.
 * `format` is LOG_FORMAT (ServerConfig.logFormat): auto means readable on a terminal, JSON elsewhere.
 */
export function logDestination(
  format: 'auto' | LogFormat,
  out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
): NodeJS.WritableStream {
  const pretty = format === 'pretty' || (format === 'auto' && out.isTTY === true);
  return pretty ? prettyStream(out) : out;
}
