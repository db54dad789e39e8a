/**
 * `memex import mail PATH` — imports mbox files and Maildir folders (plus loose .eml/.emlx files) into the
 * gateway with the same §2.6 payload and idempotency as the local collector, for users off macOS.
 *
 * Stateless by design: the gateway's idempotency makes a second import of the same mail a run of
 * duplicates (nothing twice), and a message that failed is simply sent again by the next import.
 * Progress: a cli-progress bar on a TTY, plain lines (every 500 messages and at the end) otherwise.
 *
 * Server and token: the rule of every client verb (src/cli/client.ts: --url / MEMEX_URL, --token / AUTH_TOKEN),
 * then an agent configuration file's gateway.base_url / gateway.auth_token, then DATA_DIR/auth-token.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { resolveServerTarget, type ServerTarget } from '../../../cli/client.ts';
import { AgentConfigError, expandHome, loadAgentConfig, type AgentConfig } from '../../config.ts';
import { effectiveRedaction } from '../../email/analyze.ts';
import { MAX_EMAIL_FILE_BYTES } from '../../email/parse.ts';
import { createGatewayClient, type GatewayClient } from '../../gateway-client.ts';
import { buildEmailDocument, disambiguatedSourceId } from './document.ts';
import { readMboxFile } from './mbox.ts';
import { parseCollectedMessage } from './message.ts';
import { submitEmail } from './submit.ts';

const USAGE = `usage: memex import mail PATH... [options]

Imports mbox files, Maildir folders and .eml/.emlx files into the memex gateway.

options:
  --url URL            server URL (default: MEMEX_URL, the agent config file, http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN        bearer token (default: AUTH_TOKEN, the agent config file, the file DATA_DIR/auth-token)
  --config FILE        agent configuration file (redaction settings, gateway defaults)
  --limit N            stop after N messages
  --concurrency N      submissions in flight (default 4)
  --no-attachments     do not upload attachments
  --dry-run            parse and build documents, send nothing
  -h, --help           this text`;

export interface ImportArgs {
  paths: string[];
  url?: string;
  /** Deprecated spelling of --url. */
  gateway?: string;
  token?: string;
  configPath?: string;
  limit: number | null;
  concurrency: number;
  attachments: boolean;
  dryRun: boolean;
  help: boolean;
}

export class UsageError extends Error {}

export function parseImportArgs(argv: string[]): ImportArgs {
  const a: ImportArgs = { paths: [], limit: null, concurrency: 4, attachments: true, dryRun: false, help: false };
  const args = [...argv];
  if (args[0] === 'mail') args.shift();
  for (let i = 0; i < args.length; i++) {
    const x = args[i];
    const value = (name: string) => {
      const v = args[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`);
      return v;
    };
    const eq = x.indexOf('=');
    if (x.startsWith('--') && eq > 0) {
      args.splice(i + 1, 0, x.slice(eq + 1));
      args[i] = x.slice(0, eq);
      i--;
      continue;
    }
    switch (x) {
      case '--url':
        a.url = value(x);
        break;
      case '--gateway':
        a.gateway = value(x);
        break;
      case '--token':
        a.token = value(x);
        break;
      case '--config':
        a.configPath = value(x);
        break;
      case '--limit': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1) throw new UsageError('--limit must be a positive integer');
        a.limit = n;
        break;
      }
      case '--concurrency': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1 || n > 32) throw new UsageError('--concurrency must be an integer between 1 and 32');
        a.concurrency = n;
        break;
      }
      case '--no-attachments':
        a.attachments = false;
        break;
      case '--dry-run':
        a.dryRun = true;
        break;
      case '-h':
      case '--help':
        a.help = true;
        break;
      default:
        if (x.startsWith('-')) throw new UsageError(`unknown option ${x}`);
        a.paths.push(x);
    }
  }
  return a;
}

/** One message read from a store, before parsing. */
export interface RawMail {
  bytes: Buffer;
  /** Where it came from, for messages ("inbox.mbox#12", a Maildir file path). */
  location: string;
  mailbox: string;
  emlx: boolean;
  /** The mbox `From ` line, whose date stands in for a broken Date header. */
  fromLine?: string | null;
}

/** The messages of an mbox file (see mbox.ts); one too large comes out empty, to be counted and reported. */
export async function* readMbox(file: string, mailbox: string): AsyncGenerator<RawMail> {
  for await (const m of readMboxFile(file, { maxMessageBytes: MAX_EMAIL_FILE_BYTES })) {
    yield { bytes: m.bytes, location: `${file}#${m.index}`, mailbox, emlx: false, fromLine: m.fromLine };
  }
}

function isMaildir(dir: string): boolean {
  return ['cur', 'new'].some((d) => {
    try {
      return fs.statSync(path.join(dir, d)).isDirectory();
    } catch {
      return false;
    }
  });
}

/** Maildir++ folder name of a directory: the root is INBOX, ".Work.Projects" is Work/Projects. */
function maildirName(dir: string, root: string): string {
  if (dir === root) return 'INBOX';
  const base = path.basename(dir);
  return base.startsWith('.') ? base.slice(1).split('.').join('/') : path.relative(root, dir) || base;
}

export interface ImportSource {
  kind: 'mbox' | 'maildir' | 'file';
  path: string;
  mailbox: string;
  bytes: number;
}

/** What PATH holds: an mbox file, a Maildir (with Maildir++ subfolders), or a tree containing those. */
export async function discoverSources(input: string): Promise<ImportSource[]> {
  const root = path.resolve(expandHome(input));
  const st = await fsp.stat(root);
  const out: ImportSource[] = [];
  if (st.isFile()) {
    if (/\.(eml|emlx)$/i.test(root)) out.push({ kind: 'file', path: root, mailbox: path.basename(path.dirname(root)), bytes: st.size });
    else out.push({ kind: 'mbox', path: root, mailbox: path.basename(root).replace(/\.mbox$/i, ''), bytes: st.size });
    return out;
  }
  const walk = async (dir: string, maildirRoot: string | null) => {
    const here = isMaildir(dir);
    const mdRoot = here && maildirRoot === null ? dir : maildirRoot;
    if (here) {
      for (const sub of ['cur', 'new']) {
        const d = path.join(dir, sub);
        let names: string[] = [];
        try {
          names = await fsp.readdir(d);
        } catch {
          continue;
        }
        for (const n of names.sort()) {
          const p = path.join(d, n);
          const s = await fsp.lstat(p);
          if (s.isFile()) out.push({ kind: 'maildir', path: p, mailbox: maildirName(dir, mdRoot ?? dir), bytes: s.size });
        }
      }
    }
    let entries: fs.Dirent[] = [];
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) {
        if (here && ['cur', 'new', 'tmp'].includes(e.name)) continue;
        await walk(p, here ? mdRoot : maildirRoot);
      } else if (e.isFile() && !here) {
        const s = await fsp.stat(p);
        if (/\.(eml|emlx)$/i.test(e.name)) out.push({ kind: 'file', path: p, mailbox: path.basename(dir), bytes: s.size });
        else if (/\.mbox$/i.test(e.name) || e.name === 'mbox') out.push({ kind: 'mbox', path: p, mailbox: e.name.replace(/\.mbox$/i, ''), bytes: s.size });
      }
    }
  };
  await walk(root, null);
  return out;
}

async function* readSources(sources: ImportSource[]): AsyncGenerator<RawMail> {
  for (const s of sources) {
    if (s.kind === 'mbox') {
      yield* readMbox(s.path, s.mailbox);
    } else if (s.bytes > MAX_EMAIL_FILE_BYTES) {
      yield { bytes: Buffer.alloc(0), location: s.path, mailbox: s.mailbox, emlx: false };
    } else {
      yield { bytes: await fsp.readFile(s.path), location: s.path, mailbox: s.mailbox, emlx: /\.emlx$/i.test(s.path) };
    }
  }
}

export interface ImportSummary {
  messages: number;
  accepted: number;
  duplicates: number;
  rejected: number;
  unreadable: number;
  retryLater: number;
  attachmentsUploaded: number;
}

export interface ImportOptions {
  gateway: GatewayClient;
  config: AgentConfig;
  limit?: number | null;
  concurrency?: number;
  attachments?: boolean;
  dryRun?: boolean;
  onMessage?: (summary: ImportSummary, bytes: number) => void;
  onProblem?: (location: string, reason: string) => void;
}

/** Imports every message of the sources; the core of `memex import mail`, usable without the CLI. */
export async function importMail(sources: ImportSource[], opts: ImportOptions): Promise<ImportSummary> {
  const sum: ImportSummary = { messages: 0, accepted: 0, duplicates: 0, rejected: 0, unreadable: 0, retryLater: 0, attachmentsUploaded: 0 };
  const redaction = effectiveRedaction(undefined, opts.config.modules.mail.redact_pii);
  const claims = new Map<string, string>(); // source_id -> text hash, this import
  const inFlight = new Set<Promise<void>>();
  const concurrency = opts.concurrency ?? 4;
  for await (const raw of readSources(sources)) {
    if (opts.limit && sum.messages >= opts.limit) break;
    sum.messages++;
    const report = () => opts.onMessage?.(sum, raw.bytes.length);
    if (raw.bytes.length === 0) {
      sum.unreadable++;
      opts.onProblem?.(raw.location, `empty or larger than ${MAX_EMAIL_FILE_BYTES} bytes`);
      report();
      continue;
    }
    let msg;
    try {
      msg = await parseCollectedMessage(raw.bytes, { emlx: raw.emlx, path: raw.emlx ? raw.location : undefined, mboxFromLine: raw.fromLine });
    } catch (err) {
      sum.unreadable++;
      opts.onProblem?.(raw.location, (err as Error).message);
      report();
      continue;
    }
    const src = { sourceType: 'email_local' as const, prefix: 'email', redaction, mailbox: raw.mailbox };
    let built = buildEmailDocument(msg, src);
    const prev = claims.get(built.document.source_id);
    if (prev !== undefined && prev !== built.textHash) {
      built = buildEmailDocument(msg, src, { sourceIdOverride: disambiguatedSourceId(built.document.source_id, built.textHash) });
    } else if (prev === undefined) claims.set(built.document.source_id, built.textHash);
    if (opts.dryRun) {
      report();
      continue;
    }
    const p = submitEmail(opts.gateway, built, {
      attachments: msg.attachments,
      uploadAttachments: opts.attachments ?? true,
      maxAttachmentBytes: opts.config.modules.mail.max_attachment_bytes,
    }).then((out) => {
      sum.attachmentsUploaded += out.attachmentsUploaded;
      if (out.status === 'accepted') {
        sum.accepted++;
        if (out.duplicate) sum.duplicates++;
      } else {
        if (out.status === 'rejected') sum.rejected++;
        else sum.retryLater++;
        opts.onProblem?.(raw.location, out.error ?? 'not accepted');
      }
      report();
    });
    const tracked = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
    if (inFlight.size >= concurrency) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return sum;
}

/** Server URL and token: the client rule (src/cli/client.ts), with an agent config file after the variables. */
export function resolveGatewayTarget(
  args: Pick<ImportArgs, 'url' | 'gateway' | 'token'>,
  config: AgentConfig,
  env: NodeJS.ProcessEnv,
  configFromFile: boolean,
  warn?: (message: string) => void,
): ServerTarget {
  const configured = configFromFile ? { url: config.gateway.base_url, token: config.gateway.auth_token, source: 'the agent config' } : undefined;
  return resolveServerTarget(args, env, warn, configured);
}

export async function runMailImport(
  argv: string[],
  io: { stdout?: NodeJS.WriteStream | { write(s: string): unknown; isTTY?: boolean }; stderr?: { write(s: string): unknown; isTTY?: boolean }; env?: NodeJS.ProcessEnv } = {},
): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  let args: ImportArgs;
  try {
    args = parseImportArgs(argv);
  } catch (err) {
    stderr.write(`memex import mail: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(USAGE + '\n');
    return 0;
  }
  if (args.paths.length === 0) {
    stderr.write(`memex import mail: PATH is required\n\n${USAGE}\n`);
    return 2;
  }
  let config: AgentConfig;
  let fromFile = false;
  try {
    const loaded = loadAgentConfig({ configPath: args.configPath, env });
    config = loaded.config;
    fromFile = loaded.path !== undefined;
  } catch (err) {
    if (err instanceof AgentConfigError) {
      stderr.write(`memex import mail: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const sources: ImportSource[] = [];
  for (const p of args.paths) {
    try {
      sources.push(...(await discoverSources(p)));
    } catch (err) {
      stderr.write(`memex import mail: cannot read ${p}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
      return 2;
    }
  }
  if (sources.length === 0) {
    stderr.write(`memex import mail: no mbox file, Maildir or .eml/.emlx file found under ${args.paths.join(', ')}\n`);
    return 2;
  }
  let target: ServerTarget;
  try {
    target = resolveGatewayTarget(args, config, env, fromFile, (m) => stderr.write(`memex import mail: ${m}\n`));
  } catch (err) {
    stderr.write(`memex import mail: ${(err as Error).message}\n`);
    return 2;
  }
  const gateway = createGatewayClient({
    baseUrl: target.url,
    authToken: target.token,
    ingestPath: config.gateway.ingest_path,
    ingestFilePath: config.gateway.ingest_file_path,
    timeoutSeconds: config.gateway.timeout,
  });
  const totalBytes = sources.reduce((n, s) => n + s.bytes, 0);
  const tty = stderr.isTTY === true;
  const bar = tty
    ? new cliProgress.SingleBar(
        { format: 'mail import [{bar}] {percentage}% | {messages} messages | {accepted} new+dup | {problems} problems', stream: stderr as NodeJS.WriteStream, hideCursor: true },
        cliProgress.Presets.shades_classic,
      )
    : null;
  bar?.start(Math.max(totalBytes, 1), 0, { messages: 0, accepted: 0, problems: 0 });
  let doneBytes = 0;
  let lastLine = 0;
  const problems: string[] = [];
  const summary = await importMail(sources, {
    gateway,
    config,
    limit: args.limit,
    concurrency: args.concurrency,
    attachments: args.attachments,
    dryRun: args.dryRun,
    onMessage(s, bytes) {
      doneBytes += bytes;
      const problemsN = s.rejected + s.unreadable + s.retryLater;
      if (bar) bar.update(Math.min(doneBytes, totalBytes), { messages: s.messages, accepted: s.accepted, problems: problemsN });
      else if (s.messages - lastLine >= 500) {
        lastLine = s.messages;
        stdout.write(`mail import: ${s.messages} messages read, ${s.accepted} accepted (${s.duplicates} duplicates), ${problemsN} problems\n`);
      }
    },
    onProblem(location, reason) {
      problems.push(`${location}: ${reason}`);
    },
  });
  bar?.stop();
  for (const p of problems.slice(0, 50)) stderr.write(`memex import mail: ${p}\n`);
  if (problems.length > 50) stderr.write(`memex import mail: … and ${problems.length - 50} more problems\n`);
  stdout.write(
    `mail import ${args.dryRun ? '(dry run) ' : ''}done: ${summary.messages} messages, ${summary.accepted - summary.duplicates} new, ${summary.duplicates} duplicates, ` +
      `${summary.rejected} rejected, ${summary.retryLater} not reachable, ${summary.unreadable} unreadable, ${summary.attachmentsUploaded} attachments uploaded\n`,
  );
  return summary.rejected + summary.retryLater + summary.unreadable > 0 ? 1 : 0;
}
