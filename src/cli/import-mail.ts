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
import type { ServerTarget, TargetFlags } from '../client/target.ts';
import { AgentConfigError, expandHome, loadAgentConfig, type AgentConfig } from '../agent/config.ts';
import { createGatewayClient } from '../agent/gateway-client.ts';
import { confirmManifest, discoverSources, importMail, newMessages, type ImportSource } from '../agent/collectors/email/mail-import.ts';
import { MailManifest, defaultManifestPath } from '../agent/collectors/email/manifest.ts';
import { describeStoreRedaction, storeRedaction } from '../agent/collectors/email/store-redaction.ts';
import { parsePolicyList, type RedactOptions } from '../privacy/policy.ts';
import { describeCounts, RunRecorder } from '../coverage/recorder.ts';
import { httpCoverageReporter } from '../coverage/reporter.ts';
import { UsageError } from '../util/errors.ts';
import type { OptionValues } from './options.ts';
import { defineVerb, runVerb, type VerbContext, type VerbIo } from './verbs.ts';

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
}

const IMPORT_OPTIONS = {
  config: { kind: 'string', description: 'agent configuration file (redaction settings, gateway defaults)' },
  limit: { kind: 'number', min: 1, invalid: 'must be a positive integer', description: 'stop after N messages' },
  concurrency: { kind: 'number', min: 1, max: 32, default: 2, invalid: 'must be an integer between 1 and 32', description: 'batches in flight' },
  batch: { kind: 'number', min: 1, max: 1000, default: 100, invalid: 'must be an integer between 1 and 1000', description: 'messages per POST /v1/ingest:batch' },
  state: { kind: 'string', description: 'manifest of what was sent' },
  rescan: { kind: 'boolean', description: 'read every source again, even the ones the manifest knows unchanged' },
  'no-attachments': { kind: 'boolean', description: 'do not upload attachments' },
  redact: { kind: 'string', bare: 'all', description: 'replace addresses, numbers and SSNs by markers in the stored text (LIST: some of emails,phones,account_numbers,ssn)' },
  'no-redact': { kind: 'boolean', description: 'store the text as written' },
  'dry-run': { kind: 'boolean', description: 'parse and build documents, send nothing' },
  watch: { kind: 'boolean', description: 'after the import, keep watching PATH' },
} as const;


/** The import's settings from its command line (the table's parser read it). */
function importArgs(paths: string[], v: OptionValues<typeof IMPORT_OPTIONS> & TargetFlags): ImportArgs {
  if (v.redact !== undefined && v['no-redact']) throw new UsageError('--redact goes with no --no-redact');
  let redact: RedactOptions | undefined;
  try {
    // --redact takes an optional value, so only its `=` form carries one: `--redact ~/Maildir` is a path.
    if (v.redact !== undefined) redact = parsePolicyList(v.redact);
  } catch (err) {
    throw new UsageError(`--redact: ${(err as Error).message}`);
  }
  if (v['no-redact']) redact = parsePolicyList('none');
  return {
    paths,
    url: v.url,
    gateway: v.gateway,
    token: v.token,
    configPath: v.config,
    limit: v.limit ?? null,
    concurrency: v.concurrency,
    batch: v.batch,
    statePath: v.state === undefined ? undefined : path.resolve(v.state),
    rescan: v.rescan,
    attachments: !v['no-attachments'],
    redact,
    dryRun: v['dry-run'],
    watch: v.watch,
  };
}

export const IMPORT_MAIL = defineVerb({
  name: 'import mail',
  help: `  import mail PATH...                 import mbox files and Maildir folders (docs/email-collectors.md)`,
  usage: USAGE,
  // The server may also come from the agent configuration file: resolved below, once that is read.
  server: 'configured',
  progress: true,
  positionals: 'any',
  options: IMPORT_OPTIONS,
  run: (ctx) => importMailVerb(ctx),
});

/** `memex import mail PATH...` (after `memex import`); the exit status. */
export const runMailImport = (argv: string[], io: VerbIo = {}): Promise<number> => runVerb(IMPORT_MAIL, argv[0] === 'mail' ? argv.slice(1) : argv, io);

async function importMailVerb(ctx: VerbContext<typeof IMPORT_OPTIONS>): Promise<number> {
  const { out: stdout, err: stderr, env, io } = ctx;
  const args = importArgs(ctx.args, { ...ctx.values, ...ctx.flags });
  if (args.paths.length === 0) throw new UsageError('PATH is required');
  if (args.watch && (args.dryRun || args.limit !== null)) throw new UsageError('--watch goes with neither --dry-run nor --limit');
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
    target = ctx.resolveTarget(fromFile ? { url: config.gateway.base_url, token: config.gateway.auth_token, source: 'the agent config' } : undefined);
  } catch (err) {
    ctx.say((err as Error).message);
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
  const bar = ctx.progress('mail import [{bar}] {percentage}% | {messages} messages | {accepted} new+dup | {problems} problems', { hideCursor: true });
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
