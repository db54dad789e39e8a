/**
 * `memex import TAKEOUT` (a Google Takeout .zip or .tgz, or the unpacked folder): each part goes to the importer
 * that takes it, and each is one coverage run of its own:
 * - Mail (`Mail/*.mbox`) -> `memex import mail` (src/cli/import-mail.ts, handed in by the CLI as `io.mailImport`);
 * - Contacts (`Contacts/**.vcf`) -> the vCard import (src/people/vcard.ts);
 * - Calendar (`Calendar/**.ics`) -> the calendar importer (src/calendar/import.ts);
 * - Chrome (`Chrome/BrowserHistory.json`) -> pages as in the browser import (src/imports/browser);
 * - Keep (`Keep/*.json`) -> notes.
 * Other parts are listed as skipped. An archive is unpacked (only the parts above) into a temporary folder named
 * after the archive's path, so a part keeps its coverage source from one import of the same archive to the next.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RunRecorder } from '../../coverage/recorder.ts';
import { importPages } from '../browser/command.ts';
import { BrowserFileError, readTakeoutHistory } from '../browser/history.ts';
import { connect, describeTotals, startImport, reportCoverage, sendDocuments, type Connection, type ImportIo, type MailImportVerb, type OutgoingDocument, type Output } from '../submit.ts';
import { ArchiveError, archiveKind, extractArchive, firstEntryName } from './archive.ts';
import { keepNoteDocument } from './keep.ts';

const USAGE = 'usage: memex import TAKEOUT.zip|TAKEOUT.tgz|TAKEOUT-FOLDER [--url URL] [--token TOKEN]';

/** Whether a path is a Takeout archive or folder, from its head or its entries. */
export function looksLikeTakeout(head: { kind: 'file' | 'directory'; bytes: Buffer; entries: string[] }): boolean {
  if (head.kind === 'directory') return head.entries.includes('Takeout') || head.entries.includes('archive_browser.html');
  const first = firstEntryName(head.bytes);
  return first !== null && /^Takeout\//.test(first);
}

/** The parts memex reads, by their path under Takeout/. */
function partOf(rel: string): 'mail' | 'contacts' | 'calendar' | 'chrome' | 'keep' | null {
  if (/^Mail\/.*\.mbox$/i.test(rel)) return 'mail';
  if (/^Contacts\/.*\.vcf$/i.test(rel)) return 'contacts';
  if (/^Calendar\/.*\.ics$/i.test(rel)) return 'calendar';
  if (/^Chrome\/(BrowserHistory|History)\.json$/i.test(rel)) return 'chrome';
  if (/^Keep\/[^/]+\.json$/i.test(rel)) return 'keep';
  return null;
}

const underTakeout = (name: string) => name.replace(/^Takeout\//, '');

async function listFiles(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, r)));
    else if (e.isFile()) out.push(r);
  }
  return out;
}

interface PartSummary {
  part: string;
  line: string;
  /** The importer's exit status; null: skipped. */
  code: number | null;
}

/** The folders of the parts memex reads (their other files, such as Keep's Labels.txt, are not parts of their own). */
const PART_FOLDERS = new Set(['Mail', 'Contacts', 'Calendar', 'Chrome', 'Keep']);

export async function importTakeoutCommand(argv: string[], io: ImportIo = {}): Promise<number> {
  const started = startImport(argv, io, USAGE);
  if (typeof started === 'number') return started;
  const { out, env, args } = started;
  if (args.options.size) {
    out.write(`memex import: unknown option ${[...args.options.keys()][0]}\n${USAGE}\n`);
    return 2;
  }
  const input = path.resolve(args.path);
  let conn: Connection;
  try {
    conn = connect(args, env, (m) => out.write(`memex import: ${m}\n`));
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  // Files of the parts, by their path under Takeout/, and every entry's top folder (for the skipped list).
  let root: string;
  let files: string[];
  let cleanup: string | null = null;
  const st = await fs.stat(input);
  if (st.isDirectory()) {
    const entries = await fs.readdir(input);
    root = entries.includes('Takeout') ? path.join(input, 'Takeout') : input;
    files = await listFiles(root);
  } else {
    const fh = await fs.open(input, 'r');
    const head = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    await fh.close();
    const kind = archiveKind(head.subarray(0, bytesRead));
    if (!kind) {
      out.write(`memex import: ${args.path} is not a .zip or .tgz archive\n`);
      return 2;
    }
    const dir = path.join(os.tmpdir(), `memex-takeout-${createHash('sha256').update(input).digest('hex').slice(0, 16)}`);
    await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    cleanup = dir;
    try {
      const r = await extractArchive(input, kind, dir, (name) => partOf(underTakeout(name)) !== null);
      root = path.join(dir, 'Takeout');
      files = r.names.map(underTakeout);
    } catch (err) {
      await fs.rm(dir, { recursive: true, force: true });
      out.write(`memex import: ${args.path}: ${err instanceof ArchiveError ? err.message : (err as Error).message}; nothing was imported from it\n`);
      return 1;
    }
  }
  try {
    return await importParts(input, root, files, conn, out, env, io.mailImport);
  } finally {
    if (cleanup) await fs.rm(cleanup, { recursive: true, force: true });
  }
}

async function importParts(input: string, root: string, files: string[], conn: Connection, out: Output, env: NodeJS.ProcessEnv, mailImport: MailImportVerb | undefined): Promise<number> {
  const byPart = new Map<string, string[]>();
  const other = new Map<string, number>();
  for (const f of files) {
    const part = partOf(f);
    if (part) (byPart.get(part) ?? byPart.set(part, []).get(part)!).push(f);
    else if (f.includes('/') && !PART_FOLDERS.has(f.split('/')[0])) other.set(f.split('/')[0], (other.get(f.split('/')[0]) ?? 0) + 1);
  }
  out.write(`Google Takeout ${input}: ${[...byPart].map(([p, l]) => `${p} (${l.length} file${l.length === 1 ? '' : 's'})`).join(', ') || 'no part memex reads'}\n`);
  const summaries: PartSummary[] = [];
  const target = ['--url', conn.target.url, ...(conn.target.token ? ['--token', conn.target.token] : [])];
  const abs = (rel: string) => path.join(root, rel);

  for (const mbox of byPart.get('mail') ?? []) {
    out.write(`\n== ${mbox}\n`);
    if (!mailImport) {
      out.write('memex import: this caller cannot import mail (run `memex import` for the Takeout\'s mail)\n');
      summaries.push({ part: 'Mail', line: mbox, code: 1 });
      continue;
    }
    const code = await mailImport(['mail', abs(mbox), ...target], { out, err: out, env });
    summaries.push({ part: 'Mail', line: mbox, code });
  }
  for (const vcf of byPart.get('contacts') ?? []) {
    out.write(`\n== ${vcf}\n`);
    const { importVcfCommand } = await import('../../people/vcard.ts');
    const code = await importVcfCommand([abs(vcf), ...target], env, out as NodeJS.WriteStream);
    summaries.push({ part: 'Contacts', line: vcf, code });
  }
  const calendars = byPart.get('calendar') ?? [];
  if (calendars.length) {
    const { importIcsCommand } = await import('../../calendar/import.ts');
    for (const cal of calendars) {
      out.write(`\n== ${cal}\n`);
      const code = await importIcsCommand([abs(cal), ...target], env, out as NodeJS.WritableStream);
      summaries.push({ part: 'Calendar', line: cal, code });
    }
  }
  for (const h of byPart.get('chrome') ?? []) {
    out.write(`\n== ${h}\n`);
    const run = new RunRecorder({ collector: 'import_browser', source_type: 'web_page', source_account_id: 'google_takeout', source_ref: `${input}#${h}` });
    let code: number;
    try {
      const pages = readTakeoutHistory(await fs.readFile(abs(h), 'utf8'));
      code = await importPages(pages, { browser: 'chrome', profile: 'google_takeout' }, run, conn, out, 'Chrome history (Takeout)');
    } catch (err) {
      const reason = err instanceof BrowserFileError ? err.message : `unreadable: ${(err as Error).message}`;
      out.write(`memex import: ${h}: ${reason}\n`);
      await reportCoverage(conn, run, out, reason);
      code = 1;
    }
    summaries.push({ part: 'Chrome history', line: h, code });
  }
  const keep = byPart.get('keep') ?? [];
  if (keep.length) {
    out.write(`\n== Keep (${keep.length} notes)\n`);
    summaries.push({ part: 'Keep', line: `${keep.length} files`, code: await importKeep(input, root, keep, conn, out) });
  }
  out.write('\nTakeout parts:\n');
  for (const s of summaries) {
    out.write(`  ${s.part}: ${s.line}${s.code === null ? '' : `: ${s.code === 0 ? 'done' : s.code === 1 ? 'done with problems (above)' : 'not imported (above)'}`}\n`);
  }
  for (const [name, n] of other) out.write(`  ${name}: skipped (${n} file${n === 1 ? '' : 's'}; memex has no importer for this part)\n`);
  return summaries.reduce((m, s) => Math.max(m, s.code ?? 0), 0);
}

async function importKeep(input: string, root: string, files: string[], conn: Connection, out: Output): Promise<number> {
  const run = new RunRecorder({ collector: 'import_notes', source_type: 'note', source_account_id: null, source_ref: `${input}#Keep` });
  const docs: OutgoingDocument[] = [];
  const problems: string[] = [];
  for (const f of files) {
    const ref = path.basename(f);
    run.seen(ref);
    let text: string;
    try {
      text = await fs.readFile(path.join(root, f), 'utf8');
    } catch (err) {
      run.failed(ref, `unreadable: ${(err as Error).message}`, 'unreadable');
      continue;
    }
    const r = keepNoteDocument(f, text);
    if ('doc' in r) docs.push(r.doc);
    else if ('skipped' in r) run.skipped(ref, r.skipped, r.reason);
    else {
      run.failed(ref, r.failed, 'unreadable');
      problems.push(`${f}: not imported: ${r.failed}`);
    }
  }
  const totals = await sendDocuments(conn.client, docs, run);
  for (const p of problems.slice(0, 20)) out.write(`  ${p}\n`);
  for (const r of totals.refusals.slice(0, 20)) out.write(`  ${r.ref}: refused by the server: ${r.error}\n`);
  out.write(`keep notes: ${describeTotals(totals)}\n`);
  await reportCoverage(conn, run, out);
  return run.counts().failed + run.counts().pending > 0 ? 1 : 0;
}
