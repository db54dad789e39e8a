/**
 * The CLI side of chat imports: `memex import PATH [--url URL] [--token T] [--timezone ZONE] [--region CC]
 * [--me NAME] [--chat NAME]`. PATH is a WhatsApp export (.txt or .zip), a Telegram Desktop export (result.json
 * or its folder), a Slack export (folder or zip), or a folder of WhatsApp exports (each imported on its own, an
 * unreadable one named with its error while the others go on).
 *
 *   --timezone  the zone WhatsApp's wall-clock times are read in (default: TZ, else the system's zone)
 *   --region    the region national phone numbers are read in (default: DEFAULT_PHONE_REGION, else US)
 *   --me        the exporter's own name as the export writes it (their messages are from the self person)
 *   --chat      the chat's name, when the file name does not say it (WhatsApp)
 *   --state     the file remembering what was sent (default $XDG_STATE_HOME/memex/chat-import-state.json)
 *   --rescan    send every message again (the server answers duplicates for what it holds)
 */
import fs from 'node:fs';
import path from 'node:path';
import { read } from '../../config/env.ts';
import { SERVER_SETTINGS } from '../../config/server.ts';
import { resolveServerTarget } from '../../client/target.ts';
import { createGatewayClient } from '../../client/submit.ts';
import { describeChat, describeOutcome, detectChatFormat, readChatExport, sendChat, PROVIDER_LABEL } from './import.ts';
import { isTimeZone, localTimeZone } from './tz.ts';
import { shortHash, type ChatExport, type ChatProvider } from './model.ts';
import { ChatImportState, defaultStatePath } from './state.ts';

const threadKey = (c: ChatExport) => `${c.provider}:${shortHash(c.chatKey, 32)}`;

const USAGE =
  'usage: memex import <chat export> [--url URL] [--token TOKEN] [--timezone ZONE] [--region CC] [--me NAME] [--chat NAME] [--state FILE] [--rescan]\n';

/** True for a folder that holds WhatsApp exports (by name; each file's content decides when it is imported). */
export function looksLikeWhatsAppFolder(entries: string[]): boolean {
  return entries.some((e) => /^WhatsApp.*\.(txt|zip)$/i.test(e) || e === '_chat.txt');
}

function headOf(file: string): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

export async function importChatsCommand(argv: string[], env: NodeJS.ProcessEnv = process.env, out: NodeJS.WritableStream = process.stderr): Promise<number> {
  const args = [...argv];
  const opt = (name: string) => {
    const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
    if (i < 0) return undefined;
    const a = args[i];
    if (a.includes('=')) {
      args.splice(i, 1);
      return a.slice(a.indexOf('=') + 1);
    }
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const url = opt('--url');
  const gateway = opt('--gateway');
  const tokenFlag = opt('--token');
  const timeZone = opt('--timezone') ?? (env.TZ?.trim() || localTimeZone());
  const region = (opt('--region') ?? read(env, SERVER_SETTINGS.DEFAULT_PHONE_REGION)).toUpperCase();
  const me = opt('--me') ?? null;
  const chatName = opt('--chat') ?? null;
  const stateFile = opt('--state') ?? defaultStatePath(env);
  const rescanAt = args.indexOf('--rescan');
  const rescan = rescanAt >= 0;
  if (rescan) args.splice(rescanAt, 1);
  const target = args.find((a) => !a.startsWith('--'));
  if (!target || args.some((a) => a.startsWith('--'))) {
    out.write(USAGE);
    return 2;
  }
  if (!isTimeZone(timeZone)) {
    out.write(`memex import: --timezone ${timeZone} is not a time zone (expected a name such as Europe/London or UTC)\n`);
    return 2;
  }
  if (!/^[A-Z]{2}$/.test(region)) {
    out.write(`memex import: --region ${region} is not a two-letter region code\n`);
    return 2;
  }
  let server;
  try {
    server = resolveServerTarget({ url, gateway, token: tokenFlag }, env, (m) => out.write(`memex import: ${m}\n`));
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  const client = createGatewayClient({ baseUrl: server.url, authToken: server.token, authTokenSource: server.tokenSource, timeoutSeconds: 120 });
  const { httpCoverageReporter } = await import('../../coverage/reporter.ts');
  const reporter = httpCoverageReporter({ url: server.url, token: server.token, timeoutMs: 15_000, log: { warn: () => out.write('memex import: coverage not recorded\n') } });

  // What earlier imports sent to this server, trusted once the server confirms it still holds one of them.
  const state = ChatImportState.load(stateFile, server.url);
  if (rescan) state.reset();
  else if (state.confirmations.length) {
    const id = state.confirmations[0];
    const res = await fetch(`${server.url}/v1/ingest/${encodeURIComponent(id)}`, {
      headers: server.token ? { authorization: `Bearer ${server.token}` } : {},
    }).catch(() => null);
    if (res?.status === 404) state.reset();
  }

  // The files to import: the path itself, or each WhatsApp export of a folder.
  const files: { file: string; provider: ChatProvider | null }[] = [];
  const st = fs.statSync(target);
  if (st.isDirectory()) {
    const entries = fs.readdirSync(target);
    const provider = detectChatFormat(target, 'directory', Buffer.alloc(0), entries);
    if (provider) files.push({ file: target, provider });
    else {
      for (const e of entries.sort()) {
        const f = path.join(target, e);
        if (!fs.statSync(f).isFile() || !/\.(txt|zip)$/i.test(e)) continue;
        files.push({ file: f, provider: detectChatFormat(f, 'file', headOf(f), []) });
      }
    }
  } else files.push({ file: target, provider: detectChatFormat(target, 'file', headOf(target), []) });

  let failures = 0;
  for (const { file, provider } of files) {
    if (!provider) {
      out.write(`${file}: not a chat export (looked for WhatsApp "Export chat" lines, Telegram result.json, Slack users.json + channels.json)\n`);
      failures++;
      continue;
    }
    let read;
    try {
      read = readChatExport(file, provider, { region, timeZone, me, chatName });
    } catch (err) {
      out.write(`${file}: not imported, nothing was sent: ${PROVIDER_LABEL[provider]} export unreadable: ${(err as Error).message}\n`);
      failures++;
      continue;
    }
    try {
      for (const chat of read.chats) {
        const media = chat.messages.reduce((n, m) => n + m.media.filter((r) => r.entry).length, 0);
        out.write(`${describeChat({ ...chat, messages: chat.messages.length, mediaFiles: media })}\n`);
        const o = await sendChat(read.bundle, chat, {
          client,
          sourceRef: path.resolve(file),
          known: state.known(threadKey(chat)),
          coverage: async (report) => {
            await reporter.sendRun(report);
          },
        });
        out.write(`${describeOutcome(o)}\n`);
        if (o.stopped) out.write(`  sending stopped: ${o.stopped}\n`);
        state.record(threadKey(chat), o.held, o.submissionId);
        try {
          state.save();
        } catch (err) {
          out.write(`memex import: could not write ${stateFile} (${(err as Error).message}); the next import sends everything again\n`);
        }
        for (const f of o.failed.slice(0, 5)) out.write(`  refused ${f.ref}: ${f.error}\n`);
        for (const f of o.mediaFailed.slice(0, 5)) out.write(`  media ${f.name}: ${f.error}\n`);
        if (o.failed.length || o.pending || o.mediaFailed.length) failures++;
      }
    } finally {
      read.bundle.close();
    }
  }
  return failures ? 1 : 0;
}
