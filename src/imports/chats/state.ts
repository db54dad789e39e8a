/**
 * What `memex import` of chat exports already sent, per server and per chat: a short hash of each message
 * document the server accepted (with its media). A later import of the same export, or of a longer one, sends
 * only the documents not in it, so a re-import costs the reading of the export and little more; a document whose
 * text changed (a Telegram or Slack edit) hashes differently and is sent as a new version.
 *
 * The state never answers for a server that lost its data: it keeps a few submission ids the server accepted, and
 * the importer confirms one with the server (GET /v1/ingest/{id}) before trusting it; otherwise, or with
 * --rescan, everything is sent again and the server answers duplicates for what it holds.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';

interface StateFile {
  version: 1;
  servers: Record<string, { confirm: string[]; chats: Record<string, string[]> }>;
}

const MAX_CONFIRM = 3;

export function defaultStatePath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_STATE_HOME || path.join(env.HOME || os.homedir(), '.local', 'state');
  return path.join(base, 'memex', 'chat-import-state.json');
}

/** The key a sent document is remembered by: its identity and content. */
export function documentKey(doc: object): string {
  return crypto.createHash('sha256').update(JSON.stringify(doc)).digest('base64url').slice(0, 22);
}

export class ChatImportState {
  private constructor(
    readonly file: string,
    readonly server: string,
    private data: StateFile,
  ) {}

  static load(file: string, server: string): ChatImportState {
    let data: StateFile = { version: 1, servers: {} };
    try {
      const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as StateFile;
      if (parsed?.version === 1 && parsed.servers && typeof parsed.servers === 'object') data = parsed;
    } catch {
      /* missing or unreadable: start empty (everything is sent; the server answers duplicates) */
    }
    return new ChatImportState(file, server, data);
  }

  private part() {
    return (this.data.servers[this.server] ??= { confirm: [], chats: {} });
  }

  get confirmations(): string[] {
    return this.part().confirm;
  }

  /** Forgets what was sent to this server (it no longer holds it, or --rescan). */
  reset(): void {
    this.data.servers[this.server] = { confirm: [], chats: {} };
  }

  /** The documents of a chat the server holds. */
  known(chat: string): Set<string> {
    return new Set(this.part().chats[chat] ?? []);
  }

  /** After a chat was sent: the documents the server now holds (known before, or accepted now). */
  record(chat: string, keys: Iterable<string>, submissionId: string | null): void {
    const p = this.part();
    p.chats[chat] = [...keys];
    if (submissionId && p.confirm.length < MAX_CONFIRM && !p.confirm.includes(submissionId)) p.confirm.push(submissionId);
  }

  /** Written to a temporary file, then renamed. */
  save(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(this.data), { mode: 0o600 });
    fs.renameSync(tmp, this.file);
  }
}
