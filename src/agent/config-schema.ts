/**
 * The host agent's YAML file (host-agent spec §2.1), every key declared once: its default, bounds, check and a
 * one-line description. src/agent/yaml-schema.ts reads a file with it and writes the table of docs/agent.md from it
 * (`node --import tsx scripts/config-docs.ts`; test/agent/config-docs.test.ts fails when they drift apart).
 * Environment overrides are applied on top by src/agent/config.ts.
 */
import { Type, type StaticDecode, type TObject, type TProperties } from '@sinclair/typebox';
import { isPlaceholderSecret } from '../config/server.ts';
import { isKnownZone } from '../calendar/zones.ts';
import type { DavKind } from './collectors/dav/collections.ts';
import { LOG_LEVELS } from './settings.ts';
import {
  duration,
  filePath,
  flagOr,
  int,
  list,
  mappings,
  no,
  number,
  oneOf,
  paths,
  schedule,
  section,
  sections,
  shaped,
  text,
  texts,
  yes,
  type Problem,
} from './yaml-schema.ts';

export function isLoopbackAddress(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  // IP literals only: "localhost" can be mapped to any address in /etc/hosts.
  return h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * What is wrong with a secret that is set, or undefined: an empty one, or a placeholder (`changeme` of the sample
 * files), is refused rather than served with (issue 47). Unset is fine: a secret is generated (ensureAgentSecret).
 */
export function secretProblem(secret: string): string | undefined {
  if (secret.trim() === '') return 'is empty: set a long random value, or leave it unset to have one generated';
  if (isPlaceholderSecret(secret)) {
    return `is the placeholder "${secret.trim()}", not a secret: set a long random value, or leave it unset to have one generated`;
  }
  return undefined;
}

const httpUrl = (must: string) => (value: string) => {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return must;
  }
  return u.protocol === 'http:' || u.protocol === 'https:' ? undefined : must;
};
const urlPath = (value: string) => (value.startsWith('/') ? undefined : 'must start with /');
const lowerCased = (values: string[]) => values.map((v) => v.trim().toLowerCase());

/** The ids of a list of sources are its items' names in state files and coverage: each must be unique. */
function uniqueIds(sources: Array<{ id: string }>): Problem | undefined {
  const seen = new Set<string>();
  for (const [i, s] of sources.entries()) {
    if (seen.has(s.id)) return { key: `[${i}].id`, must: 'must be unique among sources', got: s.id };
    seen.add(s.id);
  }
  return undefined;
}

/** `secret_ref` of an auth mapping; the secret is read when used, never here (collectors/email/secrets.ts). */
const secretRef = text('where the secret is: `keychain://<service>/<account>`, `env://NAME` or `file://PATH`', {
  check: (ref: string) =>
    /^(keychain:\/\/[^/]+\/.+|env:\/\/[A-Za-z_][A-Za-z0-9_]*|file:\/\/.+)$/.test(ref) ? undefined : 'must look like keychain://<service>/<account>, env://NAME or file://PATH',
});

const redaction = (description: string) =>
  Type.Optional(
    flagOr(
      section('each category, default true', {
        emails: yes('email addresses'),
        phones: yes('phone numbers'),
        account_numbers: yes('card, IBAN and other account numbers'),
        ssn: yes('US social security numbers'),
      }),
      description,
      { must: 'must be true, false or a mapping of emails, phones, account_numbers, ssn' },
    ),
  );

/** The keys of a CalDAV/CardDAV source, but the list of collections, named for the kind (see davModule). */
function davSourceKeys(type: DavKind) {
  return {
    id: text("the source's name, unique in the module"),
    type: oneOf([type], 'the only type of the module', { default: type }),
    enabled: yes('synced'),
    url: text("the server's URL", { check: httpUrl('must be an http:// or https:// URL') }),
    username: Type.Optional(text('account name')),
    auth: Type.Optional(section('how to sign in', { kind: oneOf(['password', 'bearer'], 'Basic password or bearer token', { default: 'password' }), secret_ref: Type.Optional(secretRef) })),
    poll_interval: duration('how often to sync', { default: '5m' }),
  };
}

/** A CalDAV/CardDAV source as the sync sees it (collectors/dav/sync.ts): the interval in milliseconds. */
export type DavSourceConfig = Omit<StaticDecode<TObject<ReturnType<typeof davSourceKeys>>>, 'poll_interval'> & {
  /** Collections to sync by display name or path segment (`calendars`, `address_books`); empty: every one of the kind. */
  collections: string[];
  poll_interval_ms: number;
};

function davModule<E extends TProperties>(type: DavKind, listKey: 'calendars' | 'address_books', what: string, description: string, stateFile: string, extra: E) {
  const keys = davSourceKeys(type);
  const { poll_interval, ...first } = keys;
  const collections = texts(`${what} to sync by display name or path segment; empty: every one`);
  // In the spec's order, the list named for the kind before poll_interval; typed without it, read by name below.
  const ordered = { ...first, [listKey]: collections, poll_interval } as unknown as typeof keys;
  const source = shaped(section('', ordered), (s): DavSourceConfig => {
    const out: DavSourceConfig = {
      id: s.id,
      type: s.type,
      enabled: s.enabled,
      url: s.url,
      collections: (s as unknown as Record<string, string[]>)[listKey],
      poll_interval_ms: s.poll_interval,
    };
    if (s.username !== undefined) out.username = s.username;
    if (s.auth) out.auth = s.auth;
    return out;
  });
  return section(description, {
    enabled: no('on'),
    sources: sections(`${type === 'carddav' ? 'CardDAV' : 'CalDAV'} accounts`, source, { rules: uniqueIds }),
    state_path: filePath('sync-tokens, ETags and the documents made of each member (dav/state.ts)', { default: `$XDG_STATE_HOME/memex/${stateFile}` }),
    zone: Type.Optional(
      text("zone of floating times; default `MEMEX_CALENDAR_ZONE`, else the host's", { check: (z: string) => (isKnownZone(z) ? undefined : 'must be an IANA time zone such as Europe/Berlin') }),
    ),
    ...extra,
  });
}

const LOCAL_TYPES = ['local', 'maildir', 'mbox'];
// The keys of one type are not read in a source of another (a stray `port:` in a local source was never an error).
const isLocal = (s: { type: string }) => LOCAL_TYPES.includes(s.type);
const isImap = (s: { type: string }) => s.type === 'imap';

const mailSourceKeys = section(
    '',
    {
      id: text("the source's name, unique among sources"),
      type: oneOf(['local', 'imap', 'maildir', 'mbox'], 'local: a Mail.app `.emlx` tree; maildir, mbox: watched folders and files; imap: an account', { default: 'local' }),
      enabled: yes('collected'),
      source_path: Type.Optional(filePath('local, maildir, mbox: the folder or file (required)', { readWhen: isLocal })),
      host: Type.Optional(text('imap: the server (required)', { readWhen: isImap })),
      port: Type.Optional(int('imap: the port', { min: 1, max: 65535, defaultText: '`993`, `143` without tls', readWhen: isImap })),
      tls: yes('imap: TLS from the start'),
      starttls: yes('imap with tls false: require a STARTTLS upgrade (false allows cleartext: loopback test servers)'),
      username: Type.Optional(text('imap: account name', { readWhen: isImap })),
      auth: Type.Optional(section('imap: how to sign in', { kind: oneOf(['app_password', 'xoauth2'], 'app password or OAuth2 token', { default: 'app_password' }), secret_ref: Type.Optional(secretRef) })),
      folders: texts('imap: folders to collect'),
      redact_pii: redaction('overrides `modules.mail.redact_pii` for this source'),
      poll_interval: duration('imap: how often to look where IDLE is not offered (and the safety-net check while idling)', { default: '5m' }),
      idle: yes('imap: IDLE where offered; false polls'),
      mirror_deletions: no('imap: a message deleted at the source is deleted in memex too (false: kept, marked deleted_at_source)'),
      schedule: schedule('run on a schedule instead of continuously (docs/sources.md)'),
      watch: yes('local: without a schedule, the `.emlx` tree is watched (file-system events, a rescan every 2m) and runs by itself on change; false: only `POST …:run`', { readWhen: (s: { type: string }) => s.type === 'local' }),
    },
    {
      rules: (s: { type: string; source_path?: string; host?: string }): Problem | undefined => {
        if (isLocal(s) && s.source_path === undefined) return { key: 'source_path', must: `is required for a ${s.type} source`, got: undefined };
        if (isImap(s) && s.host === undefined) return { key: 'host', must: 'is required for an imap source', got: undefined };
        return undefined;
      },
    },
);

type MailSourceYaml = StaticDecode<typeof mailSourceKeys>;

/** A mail source as the collectors see it: the keys of its type only, the interval in milliseconds. */
export type MailSourceConfig = Omit<MailSourceYaml, 'poll_interval' | 'source_path' | 'host' | 'port' | 'username' | 'watch'> &
  Partial<Pick<MailSourceYaml, 'source_path' | 'host' | 'port' | 'username' | 'watch'>> & { poll_interval_ms: number };

const mailSource = shaped(mailSourceKeys, (s): MailSourceConfig => {
    const out: MailSourceConfig = {
      id: s.id,
      type: s.type,
      enabled: s.enabled,
      tls: s.tls,
      starttls: s.starttls,
      folders: s.folders,
      poll_interval_ms: s.poll_interval,
      idle: s.idle,
      mirror_deletions: s.mirror_deletions,
    };
    if (s.schedule) out.schedule = s.schedule;
    if (s.type === 'local') out.watch = s.watch;
    // Keys of the other types are accepted and left out.
    if (s.type === 'imap') Object.assign(out, { host: s.host, port: s.port ?? (s.tls ? 993 : 143), username: s.username });
    else out.source_path = s.source_path;
    if (s.auth) out.auth = s.auth;
    if (s.redact_pii !== undefined) out.redact_pii = s.redact_pii;
    return out;
});

/** Every key of the file. */
export const AGENT_YAML = section('', {
  host: text('loopback IP literal only (127.x.x.x or ::1); anything else is refused', {
    default: '127.0.0.1',
    trim: true,
    check: (h: string) => (isLoopbackAddress(h) ? undefined : 'must be a loopback address (127.0.0.1 or ::1): the agent never listens on other interfaces'),
  }),
  port: int('`SVC_PORT`', { default: 7090, min: 1024, max: 65535 }),
  auth: shaped(
    section('the shared secret every request carries', {
      header: shaped(text('request header carrying the shared secret', { default: 'x-auth' }), (h) => h.toLowerCase()),
      secret: Type.Optional(text('`SVC_AUTH_SECRET`; unset: generated in secret_file. Empty or a placeholder (`changeme`) is refused', { blank: true })),
      secret_file: filePath('where the generated secret is kept (mode 0600)', { default: '$XDG_STATE_HOME/memex/agent-secret' }),
    }, {
      rules: (a: { secret?: string }): Problem | undefined => {
        const bad = a.secret === undefined ? undefined : secretProblem(a.secret);
        return bad ? { key: 'secret', must: bad } : undefined;
      },
    }),
    // Empty when neither the file nor SVC_AUTH_SECRET sets one: startAgent then reads or generates secret_file.
    (a) => ({ header: a.header, secret: a.secret ?? '', secret_file: a.secret_file }),
  ),
  allowed_hosts: shaped(texts('`SVC_ALLOWED_HOSTS`: host names (`name`, `name:port`, `*.domain`) answered besides localhost, *.localhost and IP addresses'), lowerCased),
  body_limit_bytes: int('largest request body in bytes (JSON and multipart alike)', { default: 25 * 1024 * 1024, min: 1024 }),
  logging: section('logs', { level: oneOf(LOG_LEVELS, '`SVC_LOG_LEVEL`; logs are JSON (pino)', { default: 'info' }) }, { accepted: { format: 'logs are always JSON' } }),
  gateway: shaped(
    section('the memex server the collectors submit to', {
      base_url: shaped(text('its http(s) URL; `SVC_GATEWAY_URL`', { default: 'http://127.0.0.1:8085', check: httpUrl('must be an http(s) URL') }), (u) => u.replace(/\/+$/, '')),
      ingest_path: text('documents; batches go to `<ingest_path>:batch`', { default: '/v1/ingest', check: urlPath }),
      ingest_file_path: text('files; several at once go to `<ingest_file_path>:batch` (one upload each if 404)', { default: '/v1/ingest/file', check: urlPath }),
      timeout: number('seconds per request attempt', { default: 30, above: 0 }),
      auth_token: Type.Optional(text('bearer token for the gateway (its `AUTH_TOKEN`); `SVC_GATEWAY_TOKEN`, else `AUTH_TOKEN`, override it')),
    }),
    // Where the token came from (a variable name or `gateway.auth_token`), for error messages; config.ts sets
    // the variable's name when the environment overrides it.
    (g) => ({ ...g, auth_token: g.auth_token, auth_token_source: g.auth_token !== undefined ? 'gateway.auth_token' : undefined }),
  ),
  modules: section('the capabilities, each on or off', {
    chatapp: section('Messages (docs/chatapp.md)', {
      enabled: no('on'),
      batch_size: int('messages per gateway batch', { default: 200, min: 1, max: 10_000 }),
      ocr_enabled: yes('OCR of image attachments'),
      chat_db_path: filePath('the Messages database', { default: '~/Library/Messages/chat.db' }),
      state_path: filePath('cursor state; the version hashes live next to it (`<name>.versions.json`)', { default: '$XDG_STATE_HOME/memex/chatapp_state.json' }),
      schedule: schedule('tail on a schedule (docs/sources.md)'),
      watch: yes('without a schedule, chat.db and its `-wal` are watched (file-system events, a rescan every 2m): a tail run on change; false: only `POST …:run`'),
    }),
    ocr: section('the OCR engine (POST /v1/ocr, attachments)', {
      enabled: yes('on'),
      languages: texts('ISO 639-1 or tesseract codes; their traineddata must be installed', { default: ['en'] }),
      timeout_ms: int('per image; the worker is terminated and replaced on timeout', { default: 10_000, min: 1 }),
      pool_size: int('tesseract workers per language set (each ~100 MB RAM once loaded)', { default: 1, min: 1, max: 16 }),
      max_pixels: int('larger images are refused (413) before decoding', { default: 40_000_000, min: 1 }),
      max_image_bytes: int('largest image in bytes', { default: 20 * 1024 * 1024, min: 1 }),
      lang_paths: paths('extra folders of `<code>.traineddata.gz`, searched before the bundled English data'),
      allowed_url_hosts: shaped(
        texts('`host:port` (a bare host: the scheme\'s default port) POST /v1/ocr {url} may fetch although loopback, private or link-local; public addresses need no entry'),
        lowerCased,
      ),
      url_timeout_ms: int('deadline of fetching an image by URL', { default: 10_000, min: 1 }),
    }, { accepted: { recognition_level: "the spec's Apple Vision setting", include_layout: "the spec's Apple Vision setting" } }),
    fswatch: section('watched folders (docs/fswatch.md)', {
      enabled: no('on'),
      watches: mappings('`[{path, glob, target, handoff}]`'),
      event_queue_size: int('file events held at most', { default: 1000, min: 1 }),
      debounce_ms: int('quiet time before a changed file is read', { default: 500, min: 0 }),
      allowed_roots: paths('folders watches may be created under (realpath\'d before the check); empty: no watch allowed'),
      state_path: filePath('watches created through the API and the per-file hash tracker', { default: '$XDG_STATE_HOME/memex/fswatch_state.json' }),
      max_file_bytes: int('larger files are skipped (recorded, not extracted)', { default: 10 * 1024 * 1024, min: 1 }),
      catalog_token: Type.Optional(text("token of DELETE /v1/catalog/documents/{id} (the gateway's `CATALOG_TOKEN`); default `gateway.auth_token`")),
    }),
    contacts: davModule('carddav', 'address_books', 'address books', 'CardDAV address books (docs/calendar.md)', 'contacts_dav_state.json', {
      catalog_token: Type.Optional(text("token of POST /catalog/contacts/ingest (the gateway's `CATALOG_TOKEN`); default `gateway.auth_token`")),
    }),
    calendar: davModule('caldav', 'calendars', 'calendars', "CalDAV calendars' events (docs/calendar.md)", 'calendar_dav_state.json', {}),
    reminders: davModule('caldav', 'calendars', 'task lists', "CalDAV task lists' to-dos", 'reminders_dav_state.json', {}),
    notes: section('a stub: listed as `stub`, collects nothing', { enabled: no('on') }),
    faces: section('a stub: listed as `stub`, collects nothing', { enabled: no('on') }),
    mail: shaped(
      section('mail: /v1/email/* and the mail collectors (docs/email-collectors.md)', {
        enabled: no('`SVC_MAIL_ENABLED`; gates every /v1/email/* route (503 when off)'),
        redact_pii: redaction('the sources\' default; unset at both levels, the stored text follows the gateway: as written on loopback, all on otherwise'),
        allowed_roots: paths("folders /v1/email/parse may read, besides local sources' source_path"),
        filters: section('which messages are collected', {
          combination_mode: oneOf(['any', 'all'], 'how the rules combine', { default: 'any' }),
          default_action: oneOf(['include', 'exclude'], 'what a message no rule matches gets', { default: 'include' }),
          files: paths('files of rules'),
          inline: list('rules'),
        }),
        sources: sections('the mail trees, folders, files and accounts collected', mailSource, { rules: uniqueIds }),
        state: section('the collectors\' state files', {
          clear_on_new_run: yes('a new run starts with a fresh run state'),
          run_state_path: filePath('run state', { default: '$XDG_STATE_HOME/memex/email_collector_state_run.json' }),
          rejected_log_path: filePath('messages the gateway refused (one file per day)', { default: '$XDG_STATE_HOME/memex/rejected_emails.log' }),
          lock_file_path: filePath('one collector run at a time', { default: '$XDG_STATE_HOME/memex/email_collector.lock' }),
          rejected_retention_days: int('days rejected logs are kept', { default: 30, min: 1 }),
        }),
        upload_attachments: yes('upload attachments of local messages through `ingest_file_path`'),
        max_attachment_bytes: int('larger attachments are not uploaded (listed in metadata and warnings instead)', { default: 25 * 1024 * 1024, min: 0 }),
        submit_concurrency: int('gateway submissions in flight at once during a run', { default: 4, min: 1, max: 32 }),
        batch_size: int('documents per gateway request: 1 sends POST `<ingest_path>` per message, more uses `<ingest_path>:batch`', { default: 100, min: 1, max: 1000 }),
      }),
      // `memex agent --print-config` has always shown the state files last.
      ({ state, ...rest }) => ({ ...rest, state }),
    ),
  }),
});

export type AgentConfig = StaticDecode<typeof AGENT_YAML>;

/** The calendar, reminders and contacts modules: CalDAV/CardDAV sources polled on their own. */
export type DavModuleConfig = AgentConfig['modules']['contacts'];
