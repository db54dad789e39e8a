/**
 * A Slack workspace export (the folder, or the zip Slack hands out): `users.json`, `channels.json` (and
 * `groups.json`, `mpims.json`, `dms.json` when the export holds private conversations), and a folder per
 * conversation of per-day files `YYYY-MM-DD.json`, each an array of messages. Each conversation is a chat; each
 * message a document with id `slack:<channel id>:<ts>` (an edited message in a later export is a new version);
 * thread replies name their thread's root through `thread_ts`; users are identifiers `slack:<team>:<user id>`
 * with their names from users.json; mentions, channel links and links in the text read as text; joins, leaves
 * and topic changes are skipped as system lines. Files are listed by name (exports hold only their links).
 */
import path from 'node:path';
import type { Bundle } from './bundle.ts';
import type { ChatExport, ChatMessage, ChatPerson, SkippedItem } from './model.ts';
import { codedError } from '../../util/errors.ts';

export class SlackFormatError extends codedError('IMPORT.UNREADABLE') {
  override name = 'SlackFormatError';
}

interface SlackUser {
  id: string;
  team_id?: string;
  name?: string;
  real_name?: string;
  deleted?: boolean;
  is_bot?: boolean;
  profile?: { real_name?: string; display_name?: string; email?: string };
}

interface SlackChannel {
  id: string;
  name?: string;
  members?: string[];
  is_general?: boolean;
  topic?: { value?: string };
  purpose?: { value?: string };
}

interface SlackMessage {
  type?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  edited?: { user?: string; ts?: string };
  files?: { id?: string; name?: string; title?: string; mimetype?: string }[];
  user_profile?: { real_name?: string; display_name?: string };
}

/** Subtypes that are no one's words. */
const SYSTEM_SUBTYPES = new Set([
  'channel_join', 'channel_leave', 'channel_topic', 'channel_purpose', 'channel_name', 'channel_archive', 'channel_unarchive',
  'group_join', 'group_leave', 'group_topic', 'group_purpose', 'group_name', 'group_archive', 'group_unarchive',
  'pinned_item', 'unpinned_item', 'bot_add', 'bot_remove', 'tombstone', 'joiner_notification', 'huddle_thread',
]);

export interface SlackOptions {
  region: string;
  timeZone: string;
}

function json<T>(b: Bundle, name: string, required: boolean): T | null {
  if (!b.names.includes(name)) {
    if (required) throw new SlackFormatError(`no ${name} in the export`);
    return null;
  }
  try {
    return JSON.parse(b.read(name).toString('utf8')) as T;
  } catch (err) {
    throw new SlackFormatError(`${name} is not readable JSON (truncated?): ${(err as Error).message}`);
  }
}

const instant = (ts: string) => new Date(Math.round(Number(ts) * 1000)).toISOString();

/** Slack's markup as text: `<@U1>` -> @name, `<#C1|general>` -> #general, `<url|label>` -> label (url), entities unescaped. */
export function slackText(text: string, nameOf: (id: string) => string | null): string {
  return text
    .replace(/<@([UW][A-Z0-9]+)(?:\|([^>]+))?>/g, (_m, id: string, label?: string) => `@${label ?? nameOf(id) ?? id}`)
    .replace(/<#([CG][A-Z0-9]+)(?:\|([^>]*))?>/g, (_m, id: string, label?: string) => `#${label || id}`)
    .replace(/<!(here|channel|everyone)(?:\|[^>]*)?>/g, '@$1')
    .replace(/<!subteam\^[A-Z0-9]+(?:\|([^>]+))?>/g, (_m, label?: string) => label ?? '@group')
    .replace(/<((?:https?|mailto):[^|>]+)\|([^>]+)>/g, (_m, url: string, label: string) => (label === url ? url : `${label} (${url})`))
    .replace(/<((?:https?|mailto):[^>]+)>/g, '$1')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** The root folder of the export inside the bundle (a zip may hold everything under one folder). */
function rootOf(b: Bundle): string {
  const users = b.names.filter((n) => path.posix.basename(n) === 'users.json').sort((x, y) => x.length - y.length)[0];
  if (!users) throw new SlackFormatError('no users.json in the export (expected users.json, channels.json and a folder per channel)');
  const dir = path.posix.dirname(users);
  return dir === '.' ? '' : `${dir}/`;
}

export function readSlack(b: Bundle, _opts: SlackOptions): ChatExport[] {
  const root = rootOf(b);
  const users = json<SlackUser[]>(b, `${root}users.json`, true) ?? [];
  if (!Array.isArray(users)) throw new SlackFormatError('users.json is not a list of users');
  const lists: { file: string; kind: ChatExport['kind'] }[] = [
    { file: 'channels.json', kind: 'channel' },
    { file: 'groups.json', kind: 'group' },
    { file: 'mpims.json', kind: 'group' },
    { file: 'dms.json', kind: 'direct' },
  ];
  const team = users.find((u) => u.team_id)?.team_id ?? 'team';
  const byId = new Map(users.map((u) => [u.id, u]));
  const nameOf = (id: string) => {
    const u = byId.get(id);
    return u ? u.profile?.real_name || u.real_name || u.profile?.display_name || u.name || null : null;
  };
  const people = new Map<string, ChatPerson>();
  const personOf = (id: string, fallbackName?: string | null): ChatPerson => {
    let p = people.get(id);
    if (!p) {
      const name = nameOf(id) ?? fallbackName ?? null;
      p = { identifier: `slack:${team}:${id}`, identifier_type: 'social', ...(name ? { display_name: name } : {}) };
      people.set(id, p);
    }
    return p;
  };

  const out: ChatExport[] = [];
  let anyList = false;
  for (const l of lists) {
    const channels = json<SlackChannel[]>(b, `${root}${l.file}`, l.file === 'channels.json' && !b.names.includes(`${root}dms.json`));
    if (!channels) continue;
    if (!Array.isArray(channels)) throw new SlackFormatError(`${l.file} is not a list of conversations`);
    anyList = true;
    for (const ch of channels) {
      // Channels have a folder by name, direct messages by id.
      const folder = [ch.name, ch.id].find((f) => f && b.names.some((n) => n.startsWith(`${root}${f}/`)));
      const days = folder ? b.names.filter((n) => n.startsWith(`${root}${folder}/`) && /\/\d{4}-\d{2}-\d{2}\.json$/.test(n)).sort() : [];
      const messages: ChatMessage[] = [];
      const skipped: SkippedItem[] = [];
      const members = new Map<string, ChatPerson>();
      for (const m of ch.members ?? []) members.set(m, personOf(m));
      for (const day of days) {
        let list: SlackMessage[];
        try {
          list = JSON.parse(b.read(day).toString('utf8')) as SlackMessage[];
        } catch (err) {
          throw new SlackFormatError(`${day} is not readable JSON (truncated?): ${(err as Error).message}`);
        }
        if (!Array.isArray(list)) throw new SlackFormatError(`${day} is not a list of messages`);
        for (const m of list) {
          const ref = `${ch.id}/${m.ts ?? '?'}`;
          if (!m.ts || !/^\d+(\.\d+)?$/.test(m.ts)) {
            skipped.push({ ref, reason: 'unsupported', detail: 'message without a timestamp' });
            continue;
          }
          if (m.subtype && SYSTEM_SUBTYPES.has(m.subtype)) {
            skipped.push({ ref, reason: 'excluded', detail: 'system line' });
            continue;
          }
          const text = slackText(m.text ?? '', nameOf).trim();
          const files = (m.files ?? []).map((f) => ({ name: (f.name || f.title || f.id || 'file').replace(/[\\/]/g, '_'), entry: null }));
          if (!text && files.length === 0) {
            skipped.push({ ref, reason: 'empty', detail: 'empty message' });
            continue;
          }
          const senderId = m.user ?? m.bot_id ?? null;
          const sender = senderId ? personOf(senderId, m.user_profile?.real_name || m.user_profile?.display_name || m.username) : null;
          if (senderId && sender) members.set(senderId, sender);
          const inThread = m.thread_ts && m.thread_ts !== m.ts;
          messages.push({
            sourceId: `slack:${ch.id}:${m.ts}`,
            at: instant(m.ts),
            sender,
            text,
            media: files,
            replyTo: inThread ? `slack:${ch.id}:${m.thread_ts}` : null,
            threadRoot: m.thread_ts ? `slack:${ch.id}:${m.thread_ts}` : null,
            edited: !!m.edited,
            editedAt: m.edited?.ts ? instant(m.edited.ts) : null,
            facts: { ts: m.ts, ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}), ...(m.subtype ? { subtype: m.subtype } : {}) },
          });
        }
      }
      const title = ch.name ? (l.kind === 'channel' ? `#${ch.name}` : ch.name) : (ch.members ?? []).map((m) => nameOf(m) ?? m).join(', ') || ch.id;
      out.push({
        provider: 'slack',
        chatKey: `slack:${team}:${ch.id}`,
        title,
        kind: l.kind,
        participants: [...members.values()],
        messages,
        skipped,
        facts: { slack_channel_id: ch.id, slack_team_id: team, ...(ch.topic?.value ? { topic: ch.topic.value } : {}), ...(ch.purpose?.value ? { purpose: ch.purpose.value } : {}) },
      });
    }
  }
  if (!anyList) throw new SlackFormatError('no channels.json (or groups.json, dms.json) in the export');
  return out;
}
