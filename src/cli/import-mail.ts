/**
 * `memex import mail PATH` — imports mbox files and Maildir folders (plus loose .eml/.emlx files) into the
 * gateway with the same §2.6 payload and idempotency as the local collector, for users off macOS. The reading
 * and sending is the email collector's (src/agent/collectors/email/mail-import.ts); this is the verb: options,
 * configuration, the manifest, coverage and progress. Progress: a cli-progress bar on a TTY, plain lines
 * (every 500 messages and at the end) otherwise.
 *
 * Server and token: the rule of every client verb (src/client/target.ts: --url / MEMEX_URL, --token / AUTH_TOKEN),
 * then an agent configuration file's gateway.base_url / gateway.auth_token, then DATA_DIR/auth-token.
 */
import path from 'node:path';
import { resolveServerTarget, type ServerTarget } from '../client/target.ts';
import { AgentConfigError, expandHome, loadAgentConfig, type AgentConfig } from '../agent/config.ts';
import { createGatewayClient } from '../agent/gateway-client.ts';
import { confirmManifest, discoverSources, importMail, newMessages, type ImportSource } from '../agent/collectors/email/mail-import.ts';
import { MailManifest, defaultManifestPath } from '../agent/collectors/email/manifest.ts';
import { describeStoreRedaction, storeRedaction } from '../agent/collectors/email/store-redaction.ts';
import { parsePolicyList, type RedactOptions } from '../privacy/policy.ts';
import { describeCounts, RunRecorder } from '../coverage/recorder.ts';
import { httpCoverageReporter } from '../coverage/reporter.ts';
import { UsageError } from '../util/errors.ts';
import { progressBar } from './progress.ts';
import { usageMessage } from './usage.ts';

const USAGE = `usage: memex import mail PATH... [options]

Imports mbox files, Maildir folders and .eml/.emlx files into the memex gateway.

options:
  --url URL            server URL (default: MEMEX_URL, the agent config file, http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN        bearer token (default: AUTH_TOKEN, the agent config file, the file DATA_DIR/auth-token)
  --config FILE        agent configuration file (redaction settings, gateway defaults)
  --limit N            stop after N messages
  --concurrency N      batches in flight (default 2)
  --batch N            messages per POST /v1/ingest:batch (default 100, at most 1000)
  --state FILE         manifest of what was sent (default: MEMEX_MAIL_IMPORT_STATE, else
                       $XDG_STATE_HOME/memex/mail-import-state.json or ~/.local/state/memex/...)
  --rescan             read every source again, even the ones the manifest knows unchanged: text built
                       by an older memex is replaced by a new version of the same document, and mail
                       imported before originals were kept gets its original
  --no-attachments     do not upload attachments
  --redact[=LIST]      replace email addresses, phone numbers, account numbers and SSNs by markers in the
                       stored text (LIST: some of emails,phones,account_numbers,ssn; default all)
  --no-redact          store the text as written
                       (default: as written when the server is on this machine, else all redacted;
                       modules.mail.redact_pii in the agent config sets it too; docs/email-collectors.md)
  --dry-run            parse and build documents, send nothing
  --watch              after the import, keep watching PATH: a message written into a Maildir's new/ or
                       cur/, or appended to an mbox, is stored within seconds (file-system events and a
                       rescan every 2 minutes); stops on Ctrl-C (docs/email-collectors.md, "Watching")
  -h, --help           this text`;

/** Seconds the import waits for one answer of the gateway (at least; gateway.timeout when longer). */
export const IMPORT_REQUEST_TIMEOUT_SECONDS = 120;

export interface ImportArgs {
  paths: string[];
  url?: string;
  /** Deprecated spelling of --url. */
  gateway?: string;
  token?: string;
  configPath?: string;
  limit: number | null;
  concurrency: number;
  batch: number;
  statePath?: string;
  rescan: boolean;
  attachments: boolean;
  /** --redact[=…] / --no-redact; undefined leaves it to the configuration and the server's address. */
  redact?: RedactOptions;
  dryRun: boolean;
  watch: boolean;
  help: boolean;
}


export function parseImportArgs(argv: string[]): ImportArgs {
  const a: ImportArgs = { paths: [], limit: null, concurrency: 2, batch: 100, rescan: false, attachments: true, dryRun: false, watch: false, help: false };
  const args = [...argv];
  if (args[0] === 'mail') args.shift();
  for (let i = 0; i < args.length; i++) {
    const x = args[i];
    const value = (name: string) => {
      const v = args[++i];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${name} needs a value`);
      return v;
    };
    // --redact takes an optional value, so only its `=` form carries one: `--redact ~/Maildir` is a path.
    if (x === '--redact' || x.startsWith('--redact=')) {
      try {
        a.redact = parsePolicyList(x === '--redact' ? 'all' : x.slice('--redact='.length));
      } catch (err) {
        throw new UsageError(`--redact: ${(err as Error).message}`);
      }
      continue;
    }
    if (x === '--no-redact') {
      a.redact = parsePolicyList('none');
      continue;
    }
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
      case '--batch': {
        const n = Number(value(x));
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError('--batch must be an integer between 1 and 1000');
        a.batch = n;
        break;
      }
      case '--state':
        a.statePath = path.resolve(value(x));
        break;
      case '--rescan':
        a.rescan = true;
        break;
      case '--no-attachments':
        a.attachments = false;
        break;
      case '--dry-run':
        a.dryRun = true;
        break;
      case '--watch':
        a.watch = true;
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

/** Server URL and token: the client rule (src/client/target.ts), with an agent config file after the variables. */
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
  io: {
    stdout?: NodeJS.WriteStream | { write(s: string): unknown; isTTY?: boolean };
    stderr?: { write(s: string): unknown; isTTY?: boolean };
    env?: NodeJS.ProcessEnv;
    /** Ends a --watch (else SIGINT or SIGTERM does). */
    signal?: AbortSignal;
    /** --watch: called once the watch is on (tests). */
    onWatching?: () => void;
  } = {},
): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const env = io.env ?? process.env;
  let args: ImportArgs;
  try {
    args = parseImportArgs(argv);
  } catch (err) {
    stderr.write(`${usageMessage('import mail', (err as Error).message, USAGE)}\n`);
    return 2;
  }
  if (args.help) {
    stdout.write(USAGE + '\n');
    return 0;
  }
  if (args.paths.length === 0) {
    stderr.write(`${usageMessage('import mail', 'PATH is required', USAGE)}\n`);
    return 2;
  }
  if (args.watch && (args.dryRun || args.limit !== null)) {
    stderr.write(`${usageMessage('import mail', '--watch goes with neither --dry-run nor --limit', USAGE)}\n`);
    return 2;
  }
  let config: AgentConfig;
  let fromFile = false;
  let configFile: string | undefined;
  try {
    const loaded = loadAgentConfig({ configPath: args.configPath, env });
    config = loaded.config;
    fromFile = loaded.path !== undefined;
    configFile = loaded.path;
  } catch (err) {
    if (err instanceof AgentConfigError) {
      stderr.write(`memex import mail: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const sources: ImportSource[] = [];
  // Coverage: one source per PATH given, whatever it holds (docs/coverage.md).
  const recorders = new Map<ImportSource, RunRecorder>();
  const runs: RunRecorder[] = [];
  for (const p of args.paths) {
    try {
      const found = await discoverSources(p);
      sources.push(...found);
      const run = new RunRecorder({ collector: 'import_mail', source_type: 'email_local', source_account_id: null, source_ref: path.resolve(expandHome(p)) });
      runs.push(run);
      for (const s of found) if (!recorders.has(s)) recorders.set(s, run);
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
    // A batch of a hundred messages with their originals can take minutes on a loaded server: a request given
    // up early is still being stored, and sending it again at once only adds to the load (issue 48).
    timeoutSeconds: Math.max(config.gateway.timeout, IMPORT_REQUEST_TIMEOUT_SECONDS),
  });
  const manifest = args.dryRun ? null : await MailManifest.load(args.statePath ?? defaultManifestPath(env), target.url);
  if (manifest && args.rescan) manifest.reset();
  else if (manifest) {
    const check = await confirmManifest(manifest, target);
    if (check === 'gone') manifest.reset();
    else if (check === 'unanswered') stderr.write(`memex import mail: ${target.url} did not answer whether it still holds the mail imported before; files unchanged since then are not sent again\n`);
  }
  const redaction = storeRedaction({ option: args.redact, module: config.modules.mail.redact_pii, gatewayUrl: target.url });
  // Said once: on the first import to this server, when the policy changes, and on a dry run.
  if (!manifest || manifest.lastRedaction !== redaction.label) stdout.write(`${describeStoreRedaction(redaction, target.url, configFile)}\n`);
  const totalBytes = sources.reduce((n, s) => n + s.bytes, 0);
  const bar = progressBar('mail import [{bar}] {percentage}% | {messages} messages | {accepted} new+dup | {problems} problems', stderr as NodeJS.WriteStream, { hideCursor: true });
  bar?.start(Math.max(totalBytes, 1), 0, { messages: 0, accepted: 0, problems: 0 });
  let doneBytes = 0;
  let lastLine = 0;
  const problems: string[] = [];
  const summary = await importMail(sources, {
    gateway,
    config,
    limit: args.limit,
    concurrency: args.concurrency,
    batchSize: args.batch,
    attachments: args.attachments,
    dryRun: args.dryRun,
    redaction,
    manifest,
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
    coverage: (s) => recorders.get(s),
  });
  bar?.stop();
  if (!args.dryRun) {
    const reporter = httpCoverageReporter({ url: target.url, token: target.token, log: { warn: (o) => stderr.write(`memex import mail: coverage not recorded: ${(o as { reason?: string }).reason}\n`) } });
    for (const run of runs) {
      await reporter.sendRun(run.report());
      stdout.write(`coverage of ${run.source.source_ref}: ${describeCounts(run.counts())}\n`);
    }
  }
  if (manifest) {
    try {
      await manifest.save(sources.length ? args.paths.map((p) => path.resolve(expandHome(p))) : [], redaction.label);
    } catch (err) {
      stderr.write(`memex import mail: cannot write the manifest ${manifest.file}: ${(err as Error).message}\n`);
    }
  }
  for (const p of problems.slice(0, 50)) stderr.write(`memex import mail: ${p}\n`);
  if (problems.length > 50) stderr.write(`memex import mail: … and ${problems.length - 50} more problems\n`);
  // New, updated and kept out as the coverage line above counts them (a new version is an update, not new).
  stdout.write(
    `mail import ${args.dryRun ? '(dry run) ' : ''}done: ${summary.messages} messages, ${newMessages(summary)} new, ` +
      `${summary.newVersions ? `${summary.newVersions} updated (a new version), ` : ''}${summary.duplicates} duplicates${summary.unchanged ? ` (${summary.unchanged} in unchanged files, not read)` : ''}, ` +
      `${summary.blocked ? `${summary.blocked} kept out by the block list, ` : ''}` +
      `${summary.rejected} rejected, ${summary.retryLater} not reachable, ${summary.unreadable} unreadable, ${summary.attachmentsUploaded} attachments uploaded` +
      `${summary.originalsStored ? `, ${summary.originalsStored} originals kept` : ''}` +
      `${summary.answeredOnRetry ? ` (${summary.answeredOnRetry} stored on a second attempt, after a slow answer)` : ''}\n`,
  );
  if (args.rescan && !args.dryRun) {
    // What a rescan is for: stored messages rebuilt from the folder (docs/email-collectors.md, "Re-deriving").
    const failed = summary.rejected + summary.retryLater + summary.unreadable;
    stdout.write(`mail rescan: ${summary.newVersions} repaired (new versions), ${summary.duplicates} unchanged, ${newMessages(summary)} new, ${failed} failed\n`);
  }
  const code = summary.rejected + summary.retryLater + summary.unreadable > 0 ? 1 : 0;
  if (!args.watch || !manifest) return code;
  await watchMail(args, { gateway, config, manifest, redaction, target, stdout, stderr, signal: io.signal, onWatching: io.onWatching });
  return 0;
}

/** --watch: the paths watched until Ctrl-C (or `signal`); a line for each run that stored something. */
async function watchMail(
  args: ImportArgs,
  o: {
    gateway: ReturnType<typeof createGatewayClient>;
    config: AgentConfig;
    manifest: MailManifest;
    redaction: ReturnType<typeof storeRedaction>;
    target: ServerTarget;
    stdout: { write(s: string): unknown };
    stderr: { write(s: string): unknown };
    signal?: AbortSignal;
    onWatching?: () => void;
  },
): Promise<void> {
  const { createMailWatcher } = await import('../agent/collectors/email/mail-watch.ts');
  const reporter = httpCoverageReporter({ url: o.target.url, token: o.target.token, log: { warn: (x) => o.stderr.write(`memex import mail: coverage not recorded: ${(x as { reason?: string }).reason}\n`) } });
  const watcher = createMailWatcher({
    paths: args.paths,
    gateway: o.gateway,
    config: o.config,
    manifest: o.manifest,
    redaction: o.redaction,
    coverage: reporter,
    attachments: args.attachments,
    onRun(s) {
      const fresh = newMessages(s);
      const failed = s.rejected + s.retryLater + s.unreadable;
      if (fresh || s.newVersions || failed) o.stdout.write(`${new Date().toISOString()} mail watch: ${fresh} new, ${s.newVersions} replaced by a new version, ${failed} not stored\n`);
    },
    onProblem: (location, reason) => o.stderr.write(`memex import mail: ${location}: ${reason}\n`),
    log: { warn: (x) => o.stderr.write(`memex import mail: ${(x as { err?: string }).err ?? 'a watched run failed'}\n`) },
  });
  await watcher.start();
  o.stdout.write(`watching ${args.paths.join(', ')} (Ctrl-C stops)\n`);
  o.onWatching?.();
  // The watch's own handles do not keep the process alive: this does, until asked to stop.
  const alive = setInterval(() => undefined, 1 << 30);
  await new Promise<void>((resolve) => {
    const done = () => resolve();
    if (o.signal) {
      if (o.signal.aborted) return resolve();
      o.signal.addEventListener('abort', done, { once: true });
    } else {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    }
  });
  clearInterval(alive);
  await watcher.stop();
}
