/**
 * `memex import PATH` for chat exports (WhatsApp .txt/.zip, Telegram Desktop result.json, Slack export folders
 * and zips): reads the whole export first (a malformed or truncated export is refused before anything is sent,
 * so nothing already stored is touched), then sends each chat's messages in batches to POST /v1/ingest:batch,
 * the media of the archive to POST /v1/ingest/file(:batch) (OCR and thumbnails as for any file), and one coverage
 * run per chat (docs/coverage.md, collector `import_chat`).
 *
 * Message ids are stable (see each reader), so a later export of the same chat is a duplicate for every message
 * memex holds already and a new document only for the new ones; a message whose text changed (a Telegram or
 * Slack edit) is a new version of its document.
 */
import path from 'node:path';
import crypto from 'node:crypto';
import type { FileUpload, GatewayClient } from '../../client/submit.ts';
import { GatewayHttpError } from '../../client/submit.ts';
import type { SkipReason } from '../../schemas/coverage.ts';
import { openBundle, type Bundle } from './bundle.ts';
import { buildDocument, mediaPath, mimeOf, type ChatExport, type ChatProvider } from './model.ts';
import { readWhatsApp, whatsAppTextEntry } from './whatsapp-export.ts';
import { looksLikeWhatsApp } from './whatsapp.ts';
import { looksLikeTelegram, readTelegram } from './telegram.ts';
import { readSlack } from './slack.ts';
import { documentKey } from './state.ts';

export interface ChatReadOptions {
  region: string;
  timeZone: string;
  me?: string | null;
  chatName?: string | null;
}

export const PROVIDER_LABEL: Record<ChatProvider, string> = { whatsapp: 'WhatsApp', telegram: 'Telegram', slack: 'Slack' };

/** Which chat format a path holds, by content; null when none. */
export function detectChatFormat(p: string, kind: 'file' | 'directory', head: Buffer, entries: string[]): ChatProvider | null {
  if (kind === 'directory') {
    if (entries.includes('result.json')) return 'telegram';
    if (entries.includes('users.json') && entries.includes('channels.json')) return 'slack';
    return null;
  }
  if (head.length >= 4 && head.readUInt32LE(0) === 0x04034b50) {
    let b: Bundle | null = null;
    try {
      b = openBundle(p);
      const names = b.names.map((n) => n.split('/').slice(-1)[0]);
      if (names.includes('users.json') && names.includes('channels.json')) return 'slack';
      if (names.includes('result.json')) return 'telegram';
      if (whatsAppTextEntry(b)) return 'whatsapp';
      return null;
    } catch {
      // A damaged archive named like a WhatsApp export is still one: its reader says what is wrong.
      return /whatsapp/i.test(path.basename(p)) ? 'whatsapp' : null;
    } finally {
      b?.close();
    }
  }
  const text = head.toString('utf8');
  if (looksLikeTelegram(text)) return 'telegram';
  if (looksLikeWhatsApp(text)) return 'whatsapp';
  return null;
}

/** Every chat of an export (a WhatsApp export holds one; Telegram and Slack many). Throws on a malformed export. */
export function readChatExport(p: string, provider: ChatProvider, opts: ChatReadOptions): { bundle: Bundle; chats: ChatExport[] } {
  const bundle = openBundle(p);
  try {
    if (provider === 'whatsapp') return { bundle, chats: [readWhatsApp(bundle, opts)] };
    if (provider === 'telegram') return { bundle, chats: readTelegram(bundle, opts) };
    return { bundle, chats: readSlack(bundle, opts) };
  } catch (err) {
    bundle.close();
    throw err;
  }
}

export interface ChatImportOutcome {
  provider: ChatProvider;
  title: string;
  kind: ChatExport['kind'];
  messages: number;
  mediaFiles: number;
  new: number;
  unchanged: number;
  updated: number;
  /** Kept out by the block list (forget with block). */
  blocked: number;
  skipped: Partial<Record<SkipReason, number>>;
  failed: { ref: string; error: string }[];
  /** Not answered (gateway unavailable): sent again by the next import. */
  pending: number;
  mediaUploaded: number;
  mediaFailed: { name: string; error: string }[];
  /** Why sending stopped early (the gateway could not be reached or refused the token), when it did. */
  stopped: string | null;
  /** Keys of the documents the server holds now (known before, or accepted with their media now). */
  held: Set<string>;
  /** A submission id the server accepted in this import (to confirm the import state later). */
  submissionId: string | null;
}

export interface SendOptions {
  client: GatewayClient;
  batchSize?: number;
  /** Largest media file uploaded (bytes); larger ones are skipped as too large. */
  maxMediaBytes?: number;
  onProgress?: (done: number, total: number) => void;
  /** Gets each chat's coverage run (the CLI posts it to the gateway). */
  coverage?: (report: import('../../schemas/coverage.ts').CoverageRunReportT) => Promise<void>;
  /** Where the export is, for coverage (absolute). */
  sourceRef?: string;
  /** Keys (state.ts documentKey) of the documents the server holds already: not sent again. */
  known?: Set<string>;
}

interface BatchAnswer {
  results?: Array<{
    index: number;
    status_code: number;
    submission: { submission_id?: string; duplicate?: boolean; version_number?: number; skipped?: string } | null;
    error: { error_code?: string; message?: string; retryable?: boolean } | null;
  }>;
}

interface FileAnswer {
  results?: Array<{ index: number; status_code: number; error: { message?: string } | null }>;
}

const FILES_PER_UPLOAD = 16;
const BYTES_PER_UPLOAD = 8 * 1024 * 1024;

function errorText(err: unknown): { text: string; retry: boolean } {
  if (err instanceof GatewayHttpError) {
    const retry = err.status === -1 || err.status === 408 || err.status === 429 || err.status >= 500 || err.status === 401 || err.status === 403;
    return { text: `${err.message}${err.body ? `: ${err.body.slice(0, 300)}` : ''}`, retry };
  }
  return { text: (err as Error)?.message ?? String(err), retry: true };
}

/** Sends one chat: its messages, then the media of the messages the gateway took. */
export async function sendChat(bundle: Bundle, chat: ChatExport, opts: SendOptions): Promise<ChatImportOutcome> {
  const { RunRecorder } = await import('../../coverage/recorder.ts');
  const rec = new RunRecorder({
    collector: 'import_chat',
    source_type: 'chatapp',
    source_account_id: chat.provider,
    source_ref: `${opts.sourceRef ?? path.resolve(bundle.path)}${chat.provider === 'whatsapp' ? '' : `#${chat.title}`}`,
  });
  const out: ChatImportOutcome = {
    provider: chat.provider, title: chat.title, kind: chat.kind, messages: chat.messages.length, mediaFiles: 0,
    new: 0, unchanged: 0, updated: 0, blocked: 0, skipped: {}, failed: [], pending: 0, mediaUploaded: 0, mediaFailed: [], stopped: null,
    held: new Set(), submissionId: null,
  };
  for (const s of chat.skipped) {
    rec.skipped(s.ref, s.reason, s.detail);
    out.skipped[s.reason] = (out.skipped[s.reason] ?? 0) + 1;
  }
  const maxMedia = opts.maxMediaBytes ?? 100 * 1024 * 1024;

  // Media bytes are read (and hashed) with their message's batch, so memory holds one batch's media at most.
  const size = opts.batchSize ?? 500;
  let stop: string | null = null;
  opts.onProgress?.(0, chat.messages.length);
  for (let i = 0; i < chat.messages.length; i += size) {
    const slice = chat.messages.slice(i, i + size);
    if (stop) {
      for (const m of slice) rec.pending(m.sourceId, `not sent: ${stop}`, 'gateway_unavailable');
      out.pending += slice.length;
      continue;
    }
    const uploads: { doc: number; up: FileUpload }[] = [];
    const docs = slice.map((m, j) => {
      const media: { name: string; sha256?: string; size?: number }[] = [];
      for (const r of m.media) {
        if (!r.entry) {
          media.push({ name: r.name });
          continue;
        }
        out.mediaFiles++;
        let data: Buffer;
        try {
          if (bundle.size(r.entry) > maxMedia) {
            rec.skipped(`${m.sourceId}/${r.name}`, 'too_large', `${r.name} is larger than ${maxMedia} bytes`);
            out.skipped.too_large = (out.skipped.too_large ?? 0) + 1;
            media.push({ name: r.name, size: bundle.size(r.entry) });
            continue;
          }
          data = bundle.read(r.entry);
        } catch (err) {
          rec.failed(`${m.sourceId}/${r.name}`, `unreadable media: ${(err as Error).message}`, 'unreadable');
          out.mediaFailed.push({ name: r.name, error: (err as Error).message });
          media.push({ name: r.name });
          continue;
        }
        const sha256 = crypto.createHash('sha256').update(data).digest('hex');
        media.push({ name: r.name, sha256, size: data.length });
        const mime = mimeOf(r.name);
        uploads.push({
          doc: j,
          up: {
            meta: {
              source: 'chatapp',
              path: mediaPath(chat, r.name),
              filename: path.posix.basename(r.name.replace(/\\/g, '/')).replace(/[\0]/g, '_') || 'attachment',
              mime_type: mime,
              sha256,
              size: data.length,
              mtime: m.at,
              chat_message: m.sourceId,
              chat_provider: chat.provider,
            },
            data,
            filename: path.posix.basename(r.name) || 'attachment',
            contentType: mime,
          },
        });
      }
      return buildDocument(chat, m, media);
    });
    const keys = docs.map((d) => documentKey(d));
    // What the server holds already (an earlier import of this chat) is not sent again.
    const toSend: number[] = [];
    keys.forEach((k, j) => {
      if (opts.known?.has(k)) {
        rec.stored(slice[j].sourceId, 'unchanged');
        out.unchanged++;
        out.held.add(k);
      } else toSend.push(j);
    });
    if (toSend.length === 0) {
      opts.onProgress?.(Math.min(i + size, chat.messages.length), chat.messages.length);
      continue;
    }
    let answer: BatchAnswer;
    try {
      answer = (await opts.client.submitBatch<BatchAnswer>(toSend.map((j) => docs[j]))).body ?? {};
    } catch (err) {
      const e = errorText(err);
      if (e.retry) {
        stop = e.text;
        for (const j of toSend) rec.pending(slice[j].sourceId, `not sent: ${e.text}`, 'gateway_unavailable');
        out.pending += toSend.length;
      } else {
        for (const m of toSend.map((j) => slice[j])) {
          rec.failed(m.sourceId, e.text, 'rejected');
          out.failed.push({ ref: m.sourceId, error: e.text });
        }
      }
      continue;
    }
    const byIndex = new Map((answer.results ?? []).map((r) => [toSend[r.index], r]));
    const accepted = new Set<number>();
    toSend.forEach((j) => {
      const m = slice[j];
      const r = byIndex.get(j);
      if (!r) {
        rec.pending(m.sourceId, 'no answer for this message', 'gateway_unavailable');
        out.pending++;
      } else if (r.error) {
        const msg = `${r.status_code} ${r.error.error_code ?? ''} ${r.error.message ?? ''}`.trim();
        if (r.error.retryable || r.status_code >= 500 || r.status_code === 429) {
          rec.pending(m.sourceId, msg, 'gateway_unavailable');
          out.pending++;
        } else {
          rec.failed(m.sourceId, msg, 'rejected');
          out.failed.push({ ref: m.sourceId, error: msg });
        }
      } else {
        const s = r.submission ?? {};
        rec.answered(m.sourceId, { status: 'accepted', duplicate: s.duplicate, versionNumber: s.version_number ?? null, skipped: s.skipped ?? null });
        if (s.skipped) out.blocked++;
        else if (s.duplicate) out.unchanged++;
        else if ((s.version_number ?? 1) > 1) out.updated++;
        else out.new++;
        if (!s.skipped) accepted.add(j);
        if (s.submission_id && !out.submissionId && !s.duplicate) out.submissionId = s.submission_id;
      }
    });
    const mediaFailed = await uploadMedia(opts.client, uploads.filter((u) => accepted.has(u.doc)), out, rec, slice.map((m) => m.sourceId));
    for (const j of accepted) if (!mediaFailed.has(j)) out.held.add(keys[j]);
    opts.onProgress?.(Math.min(i + size, chat.messages.length), chat.messages.length);
  }
  out.stopped = stop;
  if (opts.coverage) {
    await opts.coverage(
      rec.report({ cursor: { messages: chat.messages.length, media_files: out.mediaFiles, provider: chat.provider }, error: stop }),
    ).catch(() => {});
  }
  return out;
}

async function uploadMedia(
  client: GatewayClient,
  uploads: { doc: number; up: FileUpload }[],
  out: ChatImportOutcome,
  rec: InstanceType<typeof import('../../coverage/recorder.ts').RunRecorder>,
  ids: string[],
): Promise<Set<number>> {
  const failedDocs = new Set<number>();
  const requests: (typeof uploads)[] = [];
  let bytes = 0;
  for (const u of uploads) {
    const last = requests.at(-1);
    if (last && last.length < FILES_PER_UPLOAD && bytes + u.up.data.length <= BYTES_PER_UPLOAD) last.push(u);
    else {
      requests.push([u]);
      bytes = 0;
    }
    bytes += u.up.data.length;
  }
  const settle = (u: (typeof uploads)[number], error: string | null) => {
    const ref = `${ids[u.doc]}/${u.up.meta.filename}`;
    if (error) {
      failedDocs.add(u.doc);
      out.mediaFailed.push({ name: u.up.meta.filename, error });
      rec.failed(ref, error, 'rejected');
    } else out.mediaUploaded++;
  };
  for (const request of requests) {
    try {
      if (request.length === 1) {
        const u = request[0];
        await client.uploadFile(u.up.meta, u.up.data, { filename: u.up.filename, contentType: u.up.contentType });
        settle(u, null);
        continue;
      }
      const answer = (await client.uploadFiles<FileAnswer>(request.map((u) => u.up))).body ?? {};
      const byIndex = new Map((answer.results ?? []).map((r) => [r.index, r]));
      request.forEach((u, i) => {
        const r = byIndex.get(i);
        settle(u, !r ? 'no answer for this file' : r.error ? `${r.status_code} ${r.error.message ?? ''}`.trim() : null);
      });
    } catch (err) {
      for (const u of request) settle(u, errorText(err).text);
    }
  }
  return failedDocs;
}

/** "WhatsApp chat with Priya Shah: 4,812 messages, 37 media files". */
export function describeChat(o: Pick<ChatImportOutcome, 'provider' | 'title' | 'kind' | 'messages' | 'mediaFiles'>): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const what = o.kind === 'channel' ? 'channel' : o.kind === 'group' ? 'group chat' : 'chat with';
  const name = o.kind === 'direct' ? `${PROVIDER_LABEL[o.provider]} chat with ${o.title}` : `${PROVIDER_LABEL[o.provider]} ${what} ${o.title}`;
  return `${name}: ${n(o.messages)} message${o.messages === 1 ? '' : 's'}, ${n(o.mediaFiles)} media file${o.mediaFiles === 1 ? '' : 's'}`;
}

/** What happened to a chat's messages, on one line. */
export function describeOutcome(o: ChatImportOutcome): string {
  const n = (x: number) => x.toLocaleString('en-US');
  const parts = [`${n(o.new)} new`, `${n(o.unchanged)} already stored`];
  if (o.updated) parts.push(`${n(o.updated)} updated`);
  if (o.blocked) parts.push(`${n(o.blocked)} kept out (forgotten with a block)`);
  if (o.failed.length) parts.push(`${n(o.failed.length)} refused`);
  if (o.pending) parts.push(`${n(o.pending)} not sent (try again)`);
  const skipped = Object.values(o.skipped).reduce((a, b) => a + (b ?? 0), 0);
  if (skipped) parts.push(`${n(skipped)} lines skipped (system lines, deleted or left-out media)`);
  if (o.mediaFiles) parts.push(`${n(o.mediaUploaded)} media stored${o.mediaFailed.length ? `, ${n(o.mediaFailed.length)} media failed` : ''}`);
  return `  ${parts.join(', ')}`;
}
