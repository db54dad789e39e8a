/**
 * `memex export --format ndjson [--out FILE]`: the NDJSON export (src/maintenance/export.ts) from the
 * running server (GET /v1/export), or from the database when no server runs; a progress bar on
 * stderr when it is a terminal.
 */
import fs from 'node:fs';
import { once } from 'node:events';
import type { Readable } from 'node:stream';
import readline from 'node:readline';
import type { Database } from '../db/types.ts';
import type { ExportHeader } from '../maintenance/export.ts';
import { UsageError } from '../util/errors.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const EXPORT_USAGE = `usage: memex export --format ndjson [--out FILE] [--url URL] [--token TOKEN]

Writes every active document (text, metadata, people, files, a message's original), every thread and every person as
NDJSON (one JSON object per line, the first a header with counts) to FILE or standard output.
This is the way to take your data elsewhere; see docs/forget.md ("Export").`;

async function* linesOf(stream: Readable): AsyncIterable<string> {
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  for await (const line of rl) if (line) yield `${line}\n`;
}

export const EXPORT = defineVerb({
  name: 'export',
  help: `  export --format ndjson [--out FILE] documents, threads and people as NDJSON (the way to leave memex)`,
  usage: EXPORT_USAGE,
  server: 'optional',
  progress: true,
  options: {
    format: { kind: 'string', default: 'ndjson', description: 'the only one: ndjson' },
    out: { kind: 'string', short: 'o', description: 'the file to write (default: standard output)' },
  },
  async run({ values, env, out: stdout, err, progress, serverOrDatabase }) {
    if (values.format !== 'ndjson') throw new UsageError(`the only format is ndjson (got "${values.format}")`);
    /** Writes the export's lines to --out or standard output; the number of lines. */
    const write = async (lines: AsyncIterable<string>): Promise<number> => {
      const out = values.out ? fs.createWriteStream(values.out, { mode: 0o600 }) : (stdout as NodeJS.WritableStream);
      const bar = progress('export [{bar}] {value}/{total} {percentage}%');
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
        if (out !== stdout) await new Promise<void>((resolve) => (out as fs.WriteStream).end(resolve));
      }
      return written;
    };
    const written = await serverOrDatabase(
      async (server) => write(linesOf(await server.download('exportNdjson', { query: { format: 'ndjson' } }))),
      async (db) => {
        // The originals' bytes come from the object store, as the server's export includes them.
        const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
        const { loadServerConfig } = await import('../config/server.ts');
        const { exportNdjson } = await import('../maintenance/export.ts');
        const files = loadFilesConfig(env, loadServerConfig(env).dataDir);
        return write(exportNdjson(db, { store: await createObjectStore(files), maxObjectBytes: files.maxUploadBytes }));
      },
    );
    if (values.out) err.write(`memex export: ${written - 1} records written to ${values.out}\n`);
  },
});

export const runExportCommand = (argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(EXPORT, argv, { ...io, openDatabase, env });
