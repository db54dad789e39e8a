/**
 * `memex import VAULT`: a folder of Markdown notes (an Obsidian vault, or any notes folder) sent as `note`
 * documents, one coverage run for the vault. Options: `--vault NAME` (the name in every note's identity;
 * default the folder's name), `--url`, `--token`.
 */
import path from 'node:path';
import { RunRecorder } from '../../coverage/recorder.ts';
import { connect, describeTotals, startImport, reportCoverage, sendDocuments, type ImportIo, type OutgoingDocument } from '../submit.ts';
import { buildNote, linkResolver, scanVault } from './vault.ts';

const USAGE = 'usage: memex import VAULT [--vault NAME] [--url URL] [--token TOKEN]';

export async function importVaultCommand(argv: string[], io: ImportIo = {}): Promise<number> {
  const started = startImport(argv, io, USAGE);
  if (typeof started === 'number') return started;
  const { out, env, args } = started;
  const vaultName = args.options.get('--vault');
  args.options.delete('--vault');
  if (args.options.size) {
    out.write(`memex import: unknown option ${[...args.options.keys()][0]}\n${USAGE}\n`);
    return 2;
  }
  let scan;
  try {
    scan = await scanVault(args.path, vaultName);
  } catch (err) {
    out.write(`memex import: cannot read ${args.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
    return 2;
  }
  let conn;
  try {
    conn = connect(args, env, (m) => out.write(`memex import: ${m}\n`));
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  out.write(
    `${scan.obsidian ? 'Obsidian vault' : 'Markdown notes folder'} "${scan.name}": ${scan.notes.length} notes` +
      `${scan.otherFiles ? ` (${scan.otherFiles} other files left out: attachments and files that are not Markdown)` : ''}\n`,
  );
  const result = await importVaultNotes(scan, conn, out);
  return result;
}

/** Sends the notes of a scanned vault and reports its coverage; the exit status (0, or 1 when some failed). */
export async function importVaultNotes(
  scan: Awaited<ReturnType<typeof scanVault>>,
  conn: ReturnType<typeof connect>,
  out: NonNullable<ImportIo['out']>,
  provider = scan.obsidian ? 'obsidian' : 'markdown',
): Promise<number> {
  const run = new RunRecorder({ collector: 'import_notes', source_type: 'note', source_account_id: null, source_ref: path.resolve(scan.root) });
  const resolve = linkResolver(scan.notes);
  const problems: string[] = [];
  const docs: OutgoingDocument[] = [];
  for (const f of scan.notes) {
    run.seen(f.rel);
    const b = await buildNote(f, { provider, vault: scan.name }, resolve);
    if (b.doc) docs.push(b.doc);
    else if (b.problem?.kind === 'empty') run.skipped(f.rel, 'empty', b.problem.reason);
    else if (b.problem?.kind === 'too_large') {
      run.skipped(f.rel, 'too_large', b.problem.reason);
      problems.push(`${f.rel}: skipped: ${b.problem.reason}`);
    } else if (b.problem) {
      run.failed(f.rel, b.problem.reason, 'unreadable');
      problems.push(`${f.rel}: not imported: ${b.problem.reason}`);
    }
  }
  const totals = await sendDocuments(conn.client, docs, run);
  for (const r of totals.refusals) problems.push(`${r.ref}: refused by the server: ${r.error}`);
  for (const p of problems.slice(0, 50)) out.write(`  ${p}\n`);
  if (problems.length > 50) out.write(`  … and ${problems.length - 50} more\n`);
  out.write(`notes: ${describeTotals(totals)}\n`);
  await reportCoverage(conn, run, out);
  return run.counts().failed + run.counts().pending > 0 ? 1 : 0;
}
