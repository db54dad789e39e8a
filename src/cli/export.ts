/**
 * `memex export --format ndjson [--out FILE]`: the NDJSON export (src/maintenance/export.ts) from the
 * running server (GET /v1/export), or from the database when no server runs; a progress bar on
 * stderr when it is a terminal.
 */
import fs from 'node:fs';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { serverOrDatabase } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import type { Database } from '../db/types.ts';
import { exportNdjson, type ExportHeader } from '../maintenance/export.ts';
import { progressBar } from './progress.ts';

export const EXPORT_USAGE = `usage: memex export --format ndjson [--out FILE] [--url URL] [--token TOKEN]

Writes every active document (text, metadata, people, files, a message's original), every thread and every person as
NDJSON (one JSON object per line, the first a header with counts) to FILE or standard output.
This is the way to take your data elsewhere; see docs/forget.md ("Export").`;

async function* linesOf(stream: Readable): AsyncIterable<string> {
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  for await (const line of rl) if (line) yield `${line}\n`;
}

export async function runExportCommand(
  argv: string[],
  openDatabase: () => Promise<Database>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      format: { type: 'string', default: 'ndjson' },
      out: { type: 'string', short: 'o' },
      url: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(EXPORT_USAGE);
    return 0;
  }
  if (values.format !== 'ndjson') {
    console.error(`memex export: the only format is ndjson (got "${values.format}")`);
    return 2;
  }
  /** Writes the export's lines to --out or standard output; the number of lines. */
  const write = async (lines: AsyncIterable<string>): Promise<number> => {
    const out = values.out ? fs.createWriteStream(values.out, { mode: 0o600 }) : process.stdout;
    const bar = progressBar('export [{bar}] {value}/{total} {percentage}%', process.stderr);
    let written = 0;
    try {
      for await (const line of lines) {
        if (written === 0) {
          const h = JSON.parse(line) as ExportHeader;
          bar?.start(h.counts.documents + h.counts.threads + h.counts.people, 0);
        } else bar?.update(written);
        if (!out.write(line)) await once(out, 'drain');
        written++;
      }
    } finally {
      bar?.stop();
      if (out !== process.stdout) await new Promise<void>((resolve) => (out as fs.WriteStream).end(resolve));
    }
    return written;
  };
  let written: number;
  try {
    written = await serverOrDatabase(
      { flags: { url: values.url, token: values.token }, env, openDatabase },
      async (server) => write(linesOf(await server.download('exportNdjson', { query: { format: 'ndjson' } }))),
      async (db) => {
        // The originals' bytes come from the object store, as the server's export includes them.
        const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
        const { loadServerConfig } = await import('../config/server.ts');
        const files = loadFilesConfig(env, loadServerConfig(env).dataDir);
        return write(exportNdjson(db, { store: await createObjectStore(files), maxObjectBytes: files.maxUploadBytes }));
      },
    );
  } catch (err) {
    if (!(err instanceof ClientError)) throw err;
    console.error(`memex export: ${err.message}`);
    return 1;
  }
  if (values.out) console.error(`memex export: ${written - 1} records written to ${values.out}`);
  return 0;
}
