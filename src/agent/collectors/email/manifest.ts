/**
 * What `memex import mail` already sent, per gateway and per source (a Maildir message or .eml file, an mbox
 * file): its size, modification time and Message-IDs, the way notmuch and mu remember what they indexed. A
 * source whose size and mtime are unchanged is not read again; a changed one is read and sent again (the
 * gateway answers duplicates for what it already holds); a vanished one is forgotten.
 *
 * The manifest never answers for a server that lost its data: it keeps a few submission ids the gateway
 * accepted, and the importer confirms one of them with the gateway (GET /v1/ingest/{id}) before trusting the
 * manifest. A Maildir message is keyed by its folder and unique name without the `:2,` flags, so reading or
 * flagging a message (a rename, new/ -> cur/) does not make it new.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLIENT_SETTINGS } from '../../../client/target.ts';
import { read } from '../../../config/env.ts';

export interface ManifestEntry {
  size: number;
  mtime: number;
  /** Message-IDs (or message keys) of the messages the source held. */
  ids: string[];
  /**
   * policyLabel of the redaction its messages were sent with. A source sent under another policy (or before
   * the manifest recorded one, when everything was redacted) is read and sent again: the gateway keeps the
   * new text as a new version of each message.
   */
  redaction?: string;
  /** Messages (by position in `ids`) that were not stored: copies of another message, or blocked (coverage). */
  skipped?: Record<number, 'duplicate' | 'blocked'>;
  /** An mbox: where its last message starts, so a file that was only appended to is read from there. */
  resume?: MboxResume;
  /**
   * A Maildir message: the flags (IMAP names, from the file name's letters) the gateway was last told
   * (POST /v1/documents/source-state). Absent: none were sent, which the gateway takes as read and unflagged.
   */
  flags?: string[];
}

/**
 * The last message of an mbox as read: its byte offset, how many messages come before it, and a digest of the
 * bytes around it (the file's start, the 4 KiB before and its `From `). A file that grew and still has them
 * was appended to: it is read from `offset` (the last message again, in case it was half written). Otherwise
 * (rewritten, truncated) it is read whole.
 */
export interface MboxResume {
  offset: number;
  before: number;
  check: string;
}

interface GatewayPart {
  confirm: string[];
  sources: Record<string, ManifestEntry>;
  /** The redaction policy of the last import to this gateway (its line is printed when this changes). */
  redaction?: string;
}

interface ManifestFile {
  version: 1;
  gateways: Record<string, GatewayPart>;
}

const MAX_CONFIRM_IDS = 3;

export function defaultManifestPath(env: NodeJS.ProcessEnv): string {
  const configured = read(env, CLIENT_SETTINGS.MEMEX_MAIL_IMPORT_STATE);
  if (configured) return configured;
  const base = env.XDG_STATE_HOME || path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'memex', 'mail-import-state.json');
}

/** The manifest key of a source path: Maildir messages by folder + unique name (flags and cur/new dropped). */
export function sourceKey(kind: 'mbox' | 'maildir' | 'file', file: string): string {
  if (kind !== 'maildir') return file;
  const unique = path.basename(file).replace(/:2,[^/]*$/, '');
  return path.join(path.dirname(path.dirname(file)), unique);
}

const MAILDIR_FLAG_NAMES: Record<string, string> = { D: '\\Draft', F: '\\Flagged', R: '\\Answered', S: '\\Seen' };

/**
 * The flags of a Maildir message file, from the letters after `:2,` (D draft, F flagged, R replied, S seen; T and
 * the rest are left out), as IMAP names, sorted. A file in new/ has none yet: unread.
 */
export function maildirFlags(file: string): string[] {
  const m = /:2,([A-Za-z]*)$/.exec(path.basename(file));
  if (!m) return [];
  return [...new Set([...m[1]].map((c) => MAILDIR_FLAG_NAMES[c]).filter((f): f is string => f !== undefined))].sort();
}

/**
 * The flags of an mbox message, from the headers mail programs keep them in: `Status:` (R read; O, seen as new,
 * is not read), `X-Status:` (A answered, F flagged, T draft; D deleted is left out), and Gmail's `X-Gmail-Labels:`
 * in a Google Takeout mbox (Unread, Starred). As IMAP names, sorted; null when the message has none of these
 * headers (nothing is known: nothing is told).
 */
export function mboxFlags(message: Buffer): string[] | null {
  const header = headerReader(message);
  const status = header('Status');
  const xstatus = header('X-Status');
  const labels = header('X-Gmail-Labels');
  if (status === null && xstatus === null && labels === null) return null;
  const flags = new Set<string>();
  if (status !== null ? status.includes('R') : labels !== null && !/(^|,)\s*Unread\s*(,|$)/i.test(labels)) flags.add('\\Seen');
  if (labels !== null && /(^|,)\s*Unread\s*(,|$)/i.test(labels)) flags.delete('\\Seen');
  if (xstatus?.includes('A')) flags.add('\\Answered');
  if (xstatus?.includes('F') || (labels !== null && /(^|,)\s*Starred\s*(,|$)/i.test(labels))) flags.add('\\Flagged');
  if (xstatus?.includes('T')) flags.add('\\Draft');
  return [...flags].sort();
}

/** A reader of a raw message's header fields (unfolded, first of each name; decoded as Latin-1 bytes). */
function headerReader(message: Buffer): (name: string) => string | null {
  const ends = [message.indexOf('\n\n'), message.indexOf('\r\n\r\n')].filter((i) => i >= 0);
  const end = ends.length ? Math.min(...ends) : -1;
  const head = message.subarray(0, end >= 0 ? end : Math.min(message.length, 64 * 1024)).toString('latin1').replace(/\r?\n[ \t]+/g, ' ');
  return (name) => new RegExp(`^${name}:[ \t]*(.*)$`, 'im').exec(head)?.[1].trim() ?? null;
}

/** Gmail's own labels: folders, states and categories, told as flags or not at all; the person's labels are the rest. */
const GMAIL_SYSTEM_LABELS = new Set(['inbox', 'sent', 'draft', 'drafts', 'spam', 'trash', 'important', 'starred', 'unread', 'opened', 'archived', 'chat', 'muted']);

/**
 * The person's own Gmail labels of a Google Takeout mbox message (`X-Gmail-Labels:`, comma-separated, a nested
 * label as `Work/Projects`), as tag names are written: spaces become `-` ("Tax Return 2024" is `tax-return-2024`).
 * Gmail's system labels and categories are left out. Null without the header; the gateway normalises the rest.
 */
export function mboxLabels(message: Buffer): string[] | null {
  const raw = headerReader(message)('X-Gmail-Labels');
  if (raw === null) return null;
  // The header is UTF-8 in Takeout files: read back from the Latin-1 view.
  const text = Buffer.from(raw, 'latin1').toString('utf8');
  const out: string[] = [];
  for (const part of text.split(',')) {
    const label = part.trim().replace(/^"|"$/g, '');
    if (!label || GMAIL_SYSTEM_LABELS.has(label.toLowerCase()) || /^category /i.test(label)) continue;
    out.push(label.replace(/\s+/g, '-').slice(0, 200));
  }
  return out;
}

/** What the gateway takes a message's flags to be when none were sent: read, nothing else. */
export const FLAGS_UNTOLD = ['\\Seen'];

export const sameFlags = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export class MailManifest {
  private readonly seen = new Map<string, ManifestEntry>();
  private confirmIds: string[];

  private constructor(
    readonly file: string,
    readonly gateway: string,
    private data: ManifestFile,
    private known: GatewayPart,
  ) {
    this.confirmIds = [...known.confirm];
  }

  static async load(file: string, gateway: string): Promise<MailManifest> {
    let data: ManifestFile = { version: 1, gateways: {} };
    try {
      const parsed = JSON.parse(await fsp.readFile(file, 'utf8')) as ManifestFile;
      if (parsed && parsed.version === 1 && parsed.gateways && typeof parsed.gateways === 'object') data = parsed;
    } catch {
      /* missing or unreadable: start empty */
    }
    const part = data.gateways[gateway] ?? { confirm: [], sources: {} };
    return new MailManifest(file, gateway, data, part);
  }

  /** Submission ids to confirm with the gateway before trusting the manifest. */
  get confirmations(): string[] {
    return this.known.confirm;
  }

  get size(): number {
    return Object.keys(this.known.sources).length;
  }

  /** Drops what the manifest remembers for this gateway (the gateway no longer holds it). */
  reset(): void {
    this.known = { confirm: [], sources: {} };
    this.confirmIds = [];
  }

  /** The redaction policy of the last import to this gateway; undefined before the first (or an old manifest). */
  get lastRedaction(): string | undefined {
    return this.known.redaction;
  }

  /** What the last import recorded of a source (changed or not), or null. */
  previous(key: string): ManifestEntry | null {
    return this.known.sources[key] ?? null;
  }

  /** The entry of a source unchanged and sent under the redaction policy `redaction`, else null. */
  unchanged(key: string, size: number, mtime: number, redaction: string): ManifestEntry | null {
    const e = this.known.sources[key];
    if (!e || e.size !== size || e.mtime !== mtime || e.redaction !== redaction) return null;
    this.seen.set(key, e);
    return e;
  }

  /** A source whose every message the gateway accepted. */
  record(key: string, entry: ManifestEntry, submissionId: string | null): void {
    this.seen.set(key, entry);
    if (submissionId && this.confirmIds.length < MAX_CONFIRM_IDS && !this.confirmIds.includes(submissionId)) this.confirmIds.push(submissionId);
  }

  /**
   * Writes the manifest: sources under `roots` are replaced by what this run saw (a vanished or failed
   * source is forgotten); sources elsewhere stay as they were; `redaction` is this import's policy. Written
   * to a temporary file, then renamed; not written when nothing changed (false). After a save the manifest
   * answers as the file now reads, so a watcher can save after every run.
   */
  async save(roots: string[], redaction?: string): Promise<boolean> {
    const under = (key: string) => roots.some((r) => key === r || key.startsWith(r.endsWith(path.sep) ? r : r + path.sep));
    const sources: Record<string, ManifestEntry> = {};
    let changed = false;
    for (const [k, e] of Object.entries(this.known.sources)) {
      if (!under(k)) sources[k] = e;
      else if (this.seen.get(k) !== e) changed = true; // gone, or read again
    }
    for (const [k, e] of this.seen) {
      if (this.known.sources[k] !== e) changed = true;
      sources[k] = e;
    }
    // Confirmation ids must name submissions this gateway still holds: keep the old ones only with old entries.
    const confirm = Object.keys(sources).length ? this.confirmIds : [];
    const sameConfirm = confirm.length === this.known.confirm.length && confirm.every((c, i) => c === this.known.confirm[i]);
    // Nothing new (an unchanged rescan): the file is not written again.
    if (!changed && sameConfirm && (redaction ?? this.known.redaction) === this.known.redaction && this.data.gateways[this.gateway]) return false;
    this.data.gateways[this.gateway] = { confirm, sources, redaction: redaction ?? this.known.redaction };
    await fsp.mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, JSON.stringify(this.data), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
    this.known = this.data.gateways[this.gateway];
    this.seen.clear();
    return true;
  }
}
