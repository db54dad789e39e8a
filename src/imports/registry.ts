/**
 * `memex import PATH`: which importer takes a path, decided by its content (not only its name).
 *
 * Each importer says whether it recognises a path (`recognises` reads at most a small head of a file or a
 * folder's listing) and runs with the verb's arguments. The first that recognises the path runs; when none
 * does, the error names every format that was looked for. `memex import mail PATH…` stays a verb of its own
 * (it takes many paths and its own options). Importers load their code only when chosen.
 */
import fs from 'node:fs/promises';
import type { MailImportVerb } from './submit.ts';

export interface Importer {
  /** What it takes, for the "looked for" list and `memex help`, e.g. "vCard contacts (.vcf)". */
  label: string;
  recognises(path: string, head: PathHead): Promise<boolean> | boolean;
  /** Runs the import; `out` is where `memex import` writes (stderr unless a caller gives another). */
  run(argv: string[], out?: NodeJS.WritableStream, verbs?: ImportVerbs): Promise<number>;
}

/** What an importer gets to look at: the first bytes of a file, or a folder's entry names. */
export interface PathHead {
  kind: 'file' | 'directory';
  /** A file's first HEAD_BYTES bytes (empty for a folder). */
  bytes: Buffer;
  /** A folder's entry names (empty for a file). */
  entries: string[];
}

export const HEAD_BYTES = 64 * 1024;

async function readHead(path: string): Promise<PathHead> {
  const st = await fs.stat(path);
  if (st.isDirectory()) return { kind: 'directory', bytes: Buffer.alloc(0), entries: await fs.readdir(path) };
  const fh = await fs.open(path, 'r');
  try {
    const buf = Buffer.alloc(Math.min(HEAD_BYTES, st.size));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return { kind: 'file', bytes: buf.subarray(0, bytesRead), entries: [] };
  } finally {
    await fh.close();
  }
}

const vcard: Importer = {
  label: 'vCard contacts (.vcf)',
  recognises: (path, head) =>
    head.kind === 'file' && (/\.vcf$/i.test(path) || /^\s*BEGIN:VCARD/i.test(head.bytes.subarray(0, 256).toString('latin1'))),
  run: async (argv) => (await import('../people/vcard.ts')).importVcfCommand(argv),
};

const calendar: Importer = {
  label: 'iCalendar events and tasks (.ics)',
  recognises: (path, head) =>
    head.kind === 'file' &&
    (/^\s*BEGIN:VCALENDAR/i.test(head.bytes.subarray(0, 256).toString('latin1').replace(/^\uFEFF|^\xEF\xBB\xBF/, '')) ||
      (/\.(ics|ical|ifb)$/i.test(path) && !/^\s*BEGIN:VCARD/i.test(head.bytes.subarray(0, 256).toString('latin1')))),
  run: async (argv, out) => (await import('../calendar/import.ts')).importIcsCommand(argv, process.env, out),
};

const notesVault: Importer = {
  label: 'a Markdown notes folder or Obsidian vault',
  recognises: async (path, head) => head.kind === 'directory' && (await import('./notes/vault.ts')).looksLikeVault(path, head.entries),
  run: async (argv, out) => (await import('./notes/command.ts')).importVaultCommand(argv, { out }),
};

const browser: Importer = {
  label: 'browser history and bookmarks (Firefox places.sqlite, Chrome/Chromium History, Bookmarks)',
  recognises: async (path, head) => head.kind === 'file' && (await (await import('./browser/history.ts')).browserFileKind(path, head.bytes)) !== null,
  run: async (argv, out) => (await import('./browser/command.ts')).importBrowserCommand(argv, { out }),
};

const takeout: Importer = {
  label: 'a Google Takeout archive (.zip, .tgz) or its unpacked folder',
  recognises: async (_path, head) => (await import('./takeout/command.ts')).looksLikeTakeout(head),
  run: async (argv, out, verbs) => (await import('./takeout/command.ts')).importTakeoutCommand(argv, { out, mailImport: verbs?.mailImport }),
};

const chats: Importer = {
  label: 'chat exports (WhatsApp .txt/.zip, Telegram result.json, Slack export folder or zip)',
  recognises: async (path, head) => {
    const { detectChatFormat } = await import('./chats/import.ts');
    if (detectChatFormat(path, head.kind, head.bytes, head.entries)) return true;
    if (head.kind !== 'directory') return false;
    return (await import('./chats/cli.ts')).looksLikeWhatsAppFolder(head.entries);
  },
  run: async (argv, out) => (await import('./chats/cli.ts')).importChatsCommand(argv, process.env, out),
};

/** The importers of exports a watched folder hands its files to (src/imports/watch.ts). */
export const EXPORT_IMPORTERS = { chats, browser, takeout, notesVault } as const;

/** In the order they are asked; a more specific format comes before a more general one. */
export const IMPORTERS: Importer[] = [vcard, calendar, takeout, chats, browser, notesVault];

/** The path argument of `memex import` (the first argument that is not an option or an option's value). */
function pathArgument(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) {
      if (!argv[i].includes('=')) i++; // every option of the import verbs takes a value
      continue;
    }
    return argv[i];
  }
  return undefined;
}

/** The verbs of the CLI an importer may run for part of what it found (a Takeout's mail). */
export interface ImportVerbs {
  mailImport?: MailImportVerb;
}

export async function runImportCommand(argv: string[], out: NodeJS.WritableStream = process.stderr, verbs: ImportVerbs = {}): Promise<number> {
  const path = pathArgument(argv);
  if (!path) {
    out.write(`usage: memex import PATH [--url URL] [--token TOKEN]\n  takes: ${IMPORTERS.map((i) => i.label).join('; ')}\n`);
    return 2;
  }
  let head: PathHead;
  try {
    head = await readHead(path);
  } catch (err) {
    out.write(`memex import: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
    return 2;
  }
  for (const importer of IMPORTERS) if (await importer.recognises(path, head)) return importer.run(argv, out, verbs);
  out.write(`memex import: ${path} is none of the formats memex imports (looked for: ${IMPORTERS.map((i) => i.label).join('; ')})\n`);
  return 2;
}
