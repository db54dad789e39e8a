/**
 * Host agent configuration: a YAML file (host-agent spec §2.1) with environment overrides, validated by
 * hand so that every error names the file and the key, e.g.
 *   agent.yaml: modules.ocr.timeout_ms must be an integer >= 1, got "fast"
 *
 * Default file: $XDG_CONFIG_HOME/memex/agent.yaml (~/.config/memex/agent.yaml). A missing default file
 * means "all defaults"; a missing file named with --config is an error. Unknown keys are errors too: a
 * typo such as `modules.mail.enabeld` must not silently leave a module off.
 * State files default under $XDG_STATE_HOME/memex (~/.local/state/memex).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigError, isSet, read, type Setting } from '../config/env.ts';
import { isPlaceholderSecret, SERVER_SETTINGS } from '../config/server.ts';
import { parseAllowedHosts } from '../util/request-host.ts';
import type { RedactOptions } from '../privacy/policy.ts';
import { AGENT_SETTINGS, LOG_LEVELS, type AgentLogLevel } from './settings.ts';
import { parseDuration, parseSchedule, ScheduleError, type Schedule } from './sources/schedule.ts';
import type { DavSourceConfig } from './collectors/dav/sync.ts';
import { isKnownZone } from '../calendar/zones.ts';

export const SECRET_MASK = '********';

export type { AgentLogLevel };

export type { RedactOptions };

export type { DavSourceConfig };

/** The calendar, reminders and contacts modules: CalDAV/CardDAV sources polled on their own. */
export interface DavModuleConfig {
  enabled: boolean;
  sources: DavSourceConfig[];
  /** Sync-tokens, ETags and the documents made of each member (dav/state.ts). */
  state_path: string;
  /** Zone of floating times (calendar, reminders); default the host's. */
  zone?: string;
  /** contacts: token of POST /catalog/contacts/ingest (the gateway's CATALOG_TOKEN); default gateway.auth_token. */
  catalog_token?: string;
}

export interface MailSourceConfig {
  id: string;
  /** local: a Mail.app .emlx tree; maildir / mbox: watched folders and files (mail-watch.ts); imap: an account. */
  type: 'local' | 'imap' | 'maildir' | 'mbox';
  enabled: boolean;
  source_path?: string;
  host?: string;
  port?: number;
  tls: boolean;
  /** With tls false: true (default) requires a STARTTLS upgrade; false allows cleartext (loopback test servers). */
  starttls: boolean;
  username?: string;
  auth?: { kind: 'app_password' | 'xoauth2'; secret_ref?: string };
  folders: string[];
  /** Source override of the module default (undefined = inherit). */
  redact_pii?: boolean | RedactOptions;
  /** IMAP: how often to look where IDLE is not offered (and the safety-net check while idling), ms; default 5 min. */
  poll_interval_ms: number;
  /** IMAP: IDLE where offered (default true); false polls. */
  idle: boolean;
  /** IMAP: a message deleted at the source is deleted in memex too (default false: kept, marked deleted_at_source). */
  mirror_deletions: boolean;
  /** Run on a schedule instead of continuously (docs/sources.md). */
  schedule?: Schedule;
}

export interface AgentConfig {
  /** Always a loopback address; see startAgent. */
  host: string;
  port: number;
  /**
   * `secret`: empty when neither the file nor SVC_AUTH_SECRET sets one; startAgent then reads or generates
   * `secret_file` (ensureAgentSecret). A placeholder or an explicitly empty secret is a configuration error.
   */
  auth: { header: string; secret: string; secret_file: string };
  /** Host names answered besides localhost and IP addresses (src/util/request-host.ts); SVC_ALLOWED_HOSTS. */
  allowed_hosts: string[];
  /** Largest request body in bytes (JSON and multipart alike). */
  body_limit_bytes: number;
  logging: { level: AgentLogLevel };
  gateway: {
    base_url: string;
    ingest_path: string;
    ingest_file_path: string;
    /** Seconds per request attempt. */
    timeout: number;
    /** Bearer token for the gateway (its AUTH_TOKEN); env SVC_GATEWAY_TOKEN, else AUTH_TOKEN (spec §5.3). */
    auth_token?: string;
    /** Where auth_token came from (a variable name or `gateway.auth_token`), for error messages. */
    auth_token_source?: string;
  };
  modules: {
    chatapp: {
      enabled: boolean;
      batch_size: number;
      ocr_enabled: boolean;
      chat_db_path: string;
      /** Cursor state file; the version hashes live next to it (<name>.versions.json). */
      state_path: string;
      /** Tail runs on a schedule (docs/sources.md). */
      schedule?: Schedule;
    };
    ocr: {
      enabled: boolean;
      languages: string[];
      timeout_ms: number;
      pool_size: number;
      max_pixels: number;
      max_image_bytes: number;
      /** Extra folders of <code>.traineddata.gz (searched before the bundled English data). */
      lang_paths: string[];
      /**
       * `host:port` (a bare host: the scheme's default port) that POST /v1/ocr {url} may fetch although it is a
       * loopback, private or link-local address; public addresses need no entry.
       */
      allowed_url_hosts: string[];
      url_timeout_ms: number;
    };
    fswatch: {
      enabled: boolean;
      watches: Array<Record<string, unknown>>;
      event_queue_size: number;
      debounce_ms: number;
      /** Folders watches may be created under (realpath'd before the check). Empty = no watch allowed. */
      allowed_roots: string[];
      /** Watches created through the API and the per-file hash tracker. */
      state_path: string;
      /** Larger files are skipped (recorded, not extracted). */
      max_file_bytes: number;
      /** Token for DELETE /v1/catalog/documents/{id} (the gateway's CATALOG_TOKEN); default gateway.auth_token. */
      catalog_token?: string;
    };
    /** CardDAV address books (src/agent/collectors/dav/, docs/calendar.md). */
    contacts: DavModuleConfig;
    /** CalDAV calendars: their events. */
    calendar: DavModuleConfig;
    /** CalDAV task lists: their to-dos. */
    reminders: DavModuleConfig;
    notes: { enabled: boolean };
    faces: { enabled: boolean };
    mail: {
      enabled: boolean;
      /**
       * The module default of spec §2.1; undefined when the file does not set it. Unset at both levels, the
       * stored text follows the gateway: as written on loopback, all on otherwise (store-redaction.ts).
       */
      redact_pii?: boolean | RedactOptions;
      /** Extra folders (besides local sources' source_path) that /v1/email/parse may read. */
      allowed_roots: string[];
      filters: { combination_mode: 'any' | 'all'; default_action: 'include' | 'exclude'; files: string[]; inline: unknown[] };
      sources: MailSourceConfig[];
      /** Upload attachments of local messages through ingest_file_path (email collectors). */
      upload_attachments: boolean;
      /** Attachments larger than this are not uploaded (listed in metadata and warnings instead). */
      max_attachment_bytes: number;
      /** Gateway submissions in flight at once during a collector run. */
      submit_concurrency: number;
      /** Documents per gateway request: 1 sends POST <ingest_path> per message, more uses <ingest_path>:batch. */
      batch_size: number;
      state: {
        clear_on_new_run: boolean;
        run_state_path: string;
        rejected_log_path: string;
        lock_file_path: string;
        rejected_retention_days: number;
      };
    };
  };
}

export class AgentConfigError extends Error {
  override name = 'AgentConfigError';
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.trim() || path.join(os.homedir(), '.config');
  return path.join(base, 'memex', 'agent.yaml');
}

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.trim() || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'memex');
}

export function expandHome(p: string): string {
  if (p === '~') return os.homedir();
  if (p.startsWith('~/')) return path.join(os.homedir(), p.slice(2));
  return p;
}

export function defaultAgentConfig(env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const state = defaultStateDir(env);
  return {
    host: '127.0.0.1',
    port: 7090,
    auth: { header: 'x-auth', secret: '', secret_file: path.join(state, 'agent-secret') },
    allowed_hosts: [],
    body_limit_bytes: 25 * 1024 * 1024,
    logging: { level: 'info' },
    gateway: {
      base_url: 'http://127.0.0.1:8085',
      ingest_path: '/v1/ingest',
      ingest_file_path: '/v1/ingest/file',
      timeout: 30,
    },
    modules: {
      chatapp: {
        enabled: false,
        batch_size: 200,
        ocr_enabled: true,
        chat_db_path: path.join(os.homedir(), 'Library', 'Messages', 'chat.db'),
        state_path: path.join(state, 'chatapp_state.json'),
      },
      ocr: {
        enabled: true,
        languages: ['en'],
        timeout_ms: 10_000,
        pool_size: 1,
        max_pixels: 40_000_000,
        max_image_bytes: 20 * 1024 * 1024,
        lang_paths: [],
        allowed_url_hosts: [],
        url_timeout_ms: 10_000,
      },
      fswatch: {
        enabled: false,
        watches: [],
        event_queue_size: 1000,
        debounce_ms: 500,
        allowed_roots: [],
        state_path: path.join(state, 'fswatch_state.json'),
        max_file_bytes: 10 * 1024 * 1024,
      },
      contacts: { enabled: false, sources: [], state_path: path.join(state, 'contacts_dav_state.json') },
      calendar: { enabled: false, sources: [], state_path: path.join(state, 'calendar_dav_state.json') },
      reminders: { enabled: false, sources: [], state_path: path.join(state, 'reminders_dav_state.json') },
      notes: { enabled: false },
      faces: { enabled: false },
      mail: {
        enabled: false,
        allowed_roots: [],
        filters: { combination_mode: 'any', default_action: 'include', files: [], inline: [] },
        sources: [],
        upload_attachments: true,
        max_attachment_bytes: 25 * 1024 * 1024,
        submit_concurrency: 4,
        batch_size: 100,
        state: {
          clear_on_new_run: true,
          run_state_path: path.join(state, 'email_collector_state_run.json'),
          rejected_log_path: path.join(state, 'rejected_emails.log'),
          lock_file_path: path.join(state, 'email_collector.lock'),
          rejected_retention_days: 30,
        },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Validation helpers. Each reads one key of a plain object and throws a readable error.

type Obj = Record<string, unknown>;
const k = (at: string, key: string): string => (at ? `${at}.${key}` : key);

class Reader {
  constructor(private readonly file: string) {}

  fail(key: string, what: string, value: unknown): never {
    const shown = value === undefined ? 'nothing' : JSON.stringify(value);
    throw new AgentConfigError(`${this.file}: ${key} ${what}, got ${shown}`);
  }

  obj(parent: Obj, key: string, at: string): Obj | undefined {
    const v = parent[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) this.fail(at, 'must be a mapping', v);
    return v as Obj;
  }

  onlyKeys(o: Obj, allowed: string[], at: string): void {
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) {
        throw new AgentConfigError(
          `${this.file}: unknown key ${at ? `${at}.` : ''}${k} (allowed: ${allowed.join(', ')})`,
        );
      }
    }
  }

  bool(o: Obj, key: string, at: string, def: boolean): boolean {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'boolean') this.fail(k(at, key), 'must be true or false', v);
    return v;
  }

  int(o: Obj, key: string, at: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.fail(k(at, key), max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer between ${min} and ${max}`, v);
    }
    return v;
  }

  num(o: Obj, key: string, at: string, def: number, minExclusive: number): number {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= minExclusive) {
      this.fail(k(at, key), `must be a number > ${minExclusive}`, v);
    }
    return v;
  }

  str(o: Obj, key: string, at: string, def: string, nonEmpty = true): string {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (typeof v !== 'string' || (nonEmpty && v.trim() === '')) this.fail(k(at, key), 'must be a non-empty string', v);
    return v;
  }

  optStr(o: Obj, key: string, at: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    return this.str(o, key, at, '');
  }

  /** `secret_ref` of an auth mapping: keychain://, env:// or file:// (the value is read when used, never here). */
  secretRef(o: Obj, at: string): string | undefined {
    const ref = this.optStr(o, 'secret_ref', at);
    if (ref !== undefined && !/^(keychain:\/\/[^/]+\/.+|env:\/\/[A-Za-z_][A-Za-z0-9_]*|file:\/\/.+)$/.test(ref)) {
      this.fail(`${at}.secret_ref`, 'must look like keychain://<service>/<account>, env://NAME or file://PATH', ref);
    }
    return ref;
  }

  oneOf<T extends string>(o: Obj, key: string, at: string, def: T, values: readonly T[]): T {
    const v = o[key];
    if (v === undefined || v === null) return def;
    const s = typeof v === 'string' ? v.toLowerCase() : v;
    if (typeof s !== 'string' || !values.includes(s as T)) this.fail(k(at, key), `must be one of ${values.join(', ')}`, v);
    return s as T;
  }

  strList(o: Obj, key: string, at: string, def: string[]): string[] {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x.trim() === '')) {
      this.fail(k(at, key), 'must be a list of non-empty strings', v);
    }
    return v as string[];
  }

  duration(o: Obj, key: string, at: string, def: number): number {
    const v = o[key];
    if (v === undefined || v === null) return def;
    try {
      return parseDuration(v, k(at, key));
    } catch (err) {
      if (err instanceof ScheduleError) throw new AgentConfigError(`${this.file}: ${err.message}`);
      throw err;
    }
  }

  schedule(o: Obj, key: string, at: string): Schedule | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    try {
      return parseSchedule(v, k(at, key));
    } catch (err) {
      if (err instanceof ScheduleError) throw new AgentConfigError(`${this.file}: ${err.message}`);
      throw err;
    }
  }

  path(o: Obj, key: string, at: string, def: string): string {
    return path.resolve(expandHome(this.str(o, key, at, def)));
  }

  pathList(o: Obj, key: string, at: string): string[] {
    return this.strList(o, key, at, []).map((p) => path.resolve(expandHome(p)));
  }

  redact(o: Obj, key: string, at: string, def: boolean | RedactOptions | undefined): boolean | RedactOptions | undefined {
    const v = o[key];
    if (v === undefined || v === null) return def;
    if (typeof v === 'boolean') return v;
    if (typeof v !== 'object' || Array.isArray(v)) this.fail(k(at, key), 'must be true, false or a mapping of emails, phones, account_numbers, ssn', v);
    const r = v as Obj;
    const where = k(at, key);
    this.onlyKeys(r, ['emails', 'phones', 'account_numbers', 'ssn'], where);
    return {
      emails: this.bool(r, 'emails', where, true),
      phones: this.bool(r, 'phones', where, true),
      account_numbers: this.bool(r, 'account_numbers', where, true),
      ssn: this.bool(r, 'ssn', where, true),
    };
  }
}

function urlBase(r: Reader, value: string, key: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return r.fail(key, 'must be an http(s) URL', value);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') r.fail(key, 'must be an http(s) URL', value);
  return value.replace(/\/+$/, '');
}

function urlPath(r: Reader, value: string, key: string): string {
  if (!value.startsWith('/')) r.fail(key, 'must start with /', value);
  return value;
}

/** Validates a parsed YAML document on top of the defaults. `file` is the name shown in errors. */
export function validateAgentConfig(raw: unknown, file = 'agent.yaml', env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const d = defaultAgentConfig(env);
  const r = new Reader(file);
  // No file (or an empty one): the defaults, with the environment overrides still applied below.
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AgentConfigError(`${file}: the document must be a mapping of keys, got ${JSON.stringify(raw)}`);
  }
  const root = raw as Obj;
  r.onlyKeys(root, ['host', 'port', 'auth', 'allowed_hosts', 'body_limit_bytes', 'logging', 'gateway', 'modules'], '');

  const host = r.str(root, 'host', '', d.host).trim();
  if (!isLoopbackAddress(host)) r.fail('host', 'must be a loopback address (127.0.0.1 or ::1): the agent never listens on other interfaces', host);
  const port = r.int(root, 'port', '', d.port, 1024, 65535);
  const auth = r.obj(root, 'auth', 'auth') ?? {};
  r.onlyKeys(auth, ['header', 'secret', 'secret_file'], 'auth');
  const logging = r.obj(root, 'logging', 'logging') ?? {};
  r.onlyKeys(logging, ['level', 'format'], 'logging');
  const gw = r.obj(root, 'gateway', 'gateway') ?? {};
  r.onlyKeys(gw, ['base_url', 'ingest_path', 'ingest_file_path', 'timeout', 'auth_token'], 'gateway');

  const modules = r.obj(root, 'modules', 'modules') ?? {};
  const moduleNames = ['chatapp', 'ocr', 'fswatch', 'contacts', 'calendar', 'reminders', 'notes', 'faces', 'mail'];
  r.onlyKeys(modules, moduleNames, 'modules');
  const m = (name: string): Obj => r.obj(modules, name, `modules.${name}`) ?? {};

  const chat = m('chatapp');
  r.onlyKeys(chat, ['enabled', 'batch_size', 'ocr_enabled', 'chat_db_path', 'state_path', 'schedule'], 'modules.chatapp');
  const ocr = m('ocr');
  r.onlyKeys(ocr, ['enabled', 'languages', 'timeout_ms', 'pool_size', 'max_pixels', 'max_image_bytes', 'lang_paths', 'allowed_url_hosts', 'url_timeout_ms', 'recognition_level', 'include_layout'], 'modules.ocr');
  const fsw = m('fswatch');
  r.onlyKeys(fsw, ['enabled', 'watches', 'event_queue_size', 'debounce_ms', 'allowed_roots', 'state_path', 'max_file_bytes', 'catalog_token'], 'modules.fswatch');
  const dav = (name: 'contacts' | 'calendar' | 'reminders'): DavModuleConfig => {
    const o = m(name);
    const at = `modules.${name}`;
    r.onlyKeys(o, ['enabled', 'sources', 'state_path', 'zone', ...(name === 'contacts' ? ['catalog_token'] : [])], at);
    const type = name === 'contacts' ? 'carddav' : 'caldav';
    if (o.sources !== undefined && o.sources !== null && !Array.isArray(o.sources)) r.fail(`${at}.sources`, 'must be a list', o.sources);
    const ids = new Set<string>();
    const sources = ((o.sources as unknown[] | undefined) ?? []).map((raw, i): DavSourceConfig => {
      const sat = `${at}.sources[${i}]`;
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) r.fail(sat, 'must be a mapping', raw);
      const so = raw as Obj;
      const listKey = type === 'carddav' ? 'address_books' : 'calendars';
      r.onlyKeys(so, ['id', 'type', 'enabled', 'url', 'username', 'auth', listKey, 'poll_interval'], sat);
      const id = r.str(so, 'id', sat, '');
      if (!id) r.fail(`${sat}.id`, 'is required', so.id);
      if (ids.has(id)) r.fail(`${sat}.id`, 'must be unique among sources', id);
      ids.add(id);
      r.oneOf(so, 'type', sat, type, [type] as const);
      const url = r.str(so, 'url', sat, '');
      if (!url) r.fail(`${sat}.url`, 'is required', so.url);
      let parsed: URL | null = null;
      try {
        parsed = new URL(url);
      } catch {
        /* reported below */
      }
      if (!parsed || !/^https?:$/.test(parsed.protocol)) r.fail(`${sat}.url`, 'must be an http:// or https:// URL', url);
      const src: DavSourceConfig = {
        id,
        type,
        enabled: r.bool(so, 'enabled', sat, true),
        url,
        collections: r.strList(so, listKey, sat, []),
        poll_interval_ms: r.duration(so, 'poll_interval', sat, 300_000),
      };
      const user = r.optStr(so, 'username', sat);
      if (user !== undefined) src.username = user;
      const a = r.obj(so, 'auth', `${sat}.auth`);
      if (a) {
        r.onlyKeys(a, ['kind', 'secret_ref'], `${sat}.auth`);
        src.auth = { kind: r.oneOf(a, 'kind', `${sat}.auth`, 'password', ['password', 'bearer'] as const), secret_ref: r.secretRef(a, `${sat}.auth`) };
      }
      return src;
    });
    const cfgOut: DavModuleConfig = {
      enabled: r.bool(o, 'enabled', at, false),
      sources,
      state_path: r.path(o, 'state_path', at, d.modules[name].state_path),
    };
    const zone = r.optStr(o, 'zone', at);
    if (zone !== undefined && !isKnownZone(zone)) r.fail(`${at}.zone`, 'must be an IANA time zone such as Europe/Berlin', zone);
    if (zone !== undefined) cfgOut.zone = zone;
    const token = name === 'contacts' ? r.optStr(o, 'catalog_token', at) : undefined;
    if (token !== undefined) cfgOut.catalog_token = token;
    return cfgOut;
  };
  const stub = (name: 'notes' | 'faces') => {
    const o = m(name);
    r.onlyKeys(o, ['enabled'], `modules.${name}`);
    return { enabled: r.bool(o, 'enabled', `modules.${name}`, false) };
  };
  const watches = fsw.watches;
  if (watches !== undefined && watches !== null && (!Array.isArray(watches) || watches.some((w) => typeof w !== 'object' || w === null))) {
    r.fail('modules.fswatch.watches', 'must be a list of mappings', watches);
  }

  const mail = m('mail');
  r.onlyKeys(mail, ['enabled', 'redact_pii', 'allowed_roots', 'filters', 'sources', 'state', 'upload_attachments', 'max_attachment_bytes', 'submit_concurrency', 'batch_size'], 'modules.mail');
  const filters = r.obj(mail, 'filters', 'modules.mail.filters') ?? {};
  r.onlyKeys(filters, ['combination_mode', 'default_action', 'files', 'inline'], 'modules.mail.filters');
  const inline = filters.inline;
  if (inline !== undefined && inline !== null && !Array.isArray(inline)) r.fail('modules.mail.filters.inline', 'must be a list', inline);
  const st = r.obj(mail, 'state', 'modules.mail.state') ?? {};
  r.onlyKeys(st, ['clear_on_new_run', 'run_state_path', 'rejected_log_path', 'lock_file_path', 'rejected_retention_days'], 'modules.mail.state');

  const rawSources = mail.sources;
  if (rawSources !== undefined && rawSources !== null && !Array.isArray(rawSources)) {
    r.fail('modules.mail.sources', 'must be a list', rawSources);
  }
  const seen = new Set<string>();
  const sources: MailSourceConfig[] = ((rawSources as unknown[] | undefined) ?? []).map((s, i) => {
    const at = `modules.mail.sources[${i}]`;
    if (typeof s !== 'object' || s === null || Array.isArray(s)) r.fail(at, 'must be a mapping', s);
    const o = s as Obj;
    r.onlyKeys(o, ['id', 'type', 'enabled', 'source_path', 'host', 'port', 'tls', 'starttls', 'username', 'auth', 'folders', 'redact_pii', 'poll_interval', 'idle', 'mirror_deletions', 'schedule'], at);
    const id = r.str(o, 'id', at, '');
    if (!id) r.fail(`${at}.id`, 'is required', o.id);
    if (seen.has(id)) r.fail(`${at}.id`, 'must be unique among sources', id);
    seen.add(id);
    const type = r.oneOf(o, 'type', at, 'local', ['local', 'imap', 'maildir', 'mbox'] as const);
    const source: MailSourceConfig = {
      id,
      type,
      enabled: r.bool(o, 'enabled', at, true),
      tls: r.bool(o, 'tls', at, true),
      starttls: r.bool(o, 'starttls', at, true),
      folders: r.strList(o, 'folders', at, []),
      poll_interval_ms: r.duration(o, 'poll_interval', at, 300_000),
      idle: r.bool(o, 'idle', at, true),
      mirror_deletions: r.bool(o, 'mirror_deletions', at, false),
    };
    const schedule = r.schedule(o, 'schedule', at);
    if (schedule) source.schedule = schedule;
    if (type === 'local' || type === 'maildir' || type === 'mbox') {
      if (o.source_path === undefined) r.fail(`${at}.source_path`, `is required for a ${type} source`, undefined);
      source.source_path = r.path(o, 'source_path', at, '');
    }
    if (type === 'imap') {
      source.host = r.str(o, 'host', at, '');
      if (!source.host) r.fail(`${at}.host`, 'is required for an imap source', o.host);
      source.port = r.int(o, 'port', at, source.tls ? 993 : 143, 1, 65535);
      source.username = r.optStr(o, 'username', at);
    }
    const a = r.obj(o, 'auth', `${at}.auth`);
    if (a) {
      r.onlyKeys(a, ['kind', 'secret_ref'], `${at}.auth`);
      source.auth = { kind: r.oneOf(a, 'kind', `${at}.auth`, 'app_password', ['app_password', 'xoauth2'] as const), secret_ref: r.secretRef(a, `${at}.auth`) };
    }
    const red = r.redact(o, 'redact_pii', at, undefined);
    if (red !== undefined) source.redact_pii = red;
    return source;
  });

  const cfg: AgentConfig = {
    host,
    port,
    auth: {
      header: r.str(auth, 'header', 'auth', d.auth.header).toLowerCase(),
      secret: usableSecret(r.str(auth, 'secret', 'auth', d.auth.secret, false), auth.secret !== undefined && auth.secret !== null, `${file}: auth.secret`),
      secret_file: r.path(auth, 'secret_file', 'auth', d.auth.secret_file),
    },
    allowed_hosts: r.strList(root, 'allowed_hosts', '', []).map((h) => h.trim().toLowerCase()),
    body_limit_bytes: r.int(root, 'body_limit_bytes', '', d.body_limit_bytes, 1024),
    logging: { level: r.oneOf(logging, 'level', 'logging', d.logging.level, LOG_LEVELS) },
    gateway: {
      base_url: urlBase(r, r.str(gw, 'base_url', 'gateway', d.gateway.base_url), 'gateway.base_url'),
      ingest_path: urlPath(r, r.str(gw, 'ingest_path', 'gateway', d.gateway.ingest_path), 'gateway.ingest_path'),
      ingest_file_path: urlPath(r, r.str(gw, 'ingest_file_path', 'gateway', d.gateway.ingest_file_path), 'gateway.ingest_file_path'),
      timeout: r.num(gw, 'timeout', 'gateway', d.gateway.timeout, 0),
      auth_token: r.optStr(gw, 'auth_token', 'gateway'),
      auth_token_source: r.optStr(gw, 'auth_token', 'gateway') !== undefined ? 'gateway.auth_token' : undefined,
    },
    modules: {
      chatapp: {
        enabled: r.bool(chat, 'enabled', 'modules.chatapp', d.modules.chatapp.enabled),
        batch_size: r.int(chat, 'batch_size', 'modules.chatapp', d.modules.chatapp.batch_size, 1, 10_000),
        ocr_enabled: r.bool(chat, 'ocr_enabled', 'modules.chatapp', d.modules.chatapp.ocr_enabled),
        chat_db_path: r.path(chat, 'chat_db_path', 'modules.chatapp', d.modules.chatapp.chat_db_path),
        state_path: r.path(chat, 'state_path', 'modules.chatapp', d.modules.chatapp.state_path),
        ...(r.schedule(chat, 'schedule', 'modules.chatapp') ? { schedule: r.schedule(chat, 'schedule', 'modules.chatapp') } : {}),
      },
      ocr: {
        enabled: r.bool(ocr, 'enabled', 'modules.ocr', d.modules.ocr.enabled),
        languages: r.strList(ocr, 'languages', 'modules.ocr', d.modules.ocr.languages),
        timeout_ms: r.int(ocr, 'timeout_ms', 'modules.ocr', d.modules.ocr.timeout_ms, 1),
        pool_size: r.int(ocr, 'pool_size', 'modules.ocr', d.modules.ocr.pool_size, 1, 16),
        max_pixels: r.int(ocr, 'max_pixels', 'modules.ocr', d.modules.ocr.max_pixels, 1),
        max_image_bytes: r.int(ocr, 'max_image_bytes', 'modules.ocr', d.modules.ocr.max_image_bytes, 1),
        lang_paths: r.pathList(ocr, 'lang_paths', 'modules.ocr'),
        allowed_url_hosts: r.strList(ocr, 'allowed_url_hosts', 'modules.ocr', []).map((h) => h.trim().toLowerCase()),
        url_timeout_ms: r.int(ocr, 'url_timeout_ms', 'modules.ocr', d.modules.ocr.url_timeout_ms, 1),
      },
      fswatch: {
        enabled: r.bool(fsw, 'enabled', 'modules.fswatch', false),
        watches: (watches as Array<Record<string, unknown>> | undefined) ?? [],
        event_queue_size: r.int(fsw, 'event_queue_size', 'modules.fswatch', d.modules.fswatch.event_queue_size, 1),
        debounce_ms: r.int(fsw, 'debounce_ms', 'modules.fswatch', d.modules.fswatch.debounce_ms, 0),
        allowed_roots: r.pathList(fsw, 'allowed_roots', 'modules.fswatch'),
        state_path: r.path(fsw, 'state_path', 'modules.fswatch', d.modules.fswatch.state_path),
        max_file_bytes: r.int(fsw, 'max_file_bytes', 'modules.fswatch', d.modules.fswatch.max_file_bytes, 1),
        catalog_token: r.optStr(fsw, 'catalog_token', 'modules.fswatch'),
      },
      contacts: dav('contacts'),
      calendar: dav('calendar'),
      reminders: dav('reminders'),
      notes: stub('notes'),
      faces: stub('faces'),
      mail: {
        enabled: r.bool(mail, 'enabled', 'modules.mail', d.modules.mail.enabled),
        redact_pii: r.redact(mail, 'redact_pii', 'modules.mail', undefined),
        allowed_roots: r.pathList(mail, 'allowed_roots', 'modules.mail'),
        filters: {
          combination_mode: r.oneOf(filters, 'combination_mode', 'modules.mail.filters', 'any', ['any', 'all'] as const),
          default_action: r.oneOf(filters, 'default_action', 'modules.mail.filters', 'include', ['include', 'exclude'] as const),
          files: r.pathList(filters, 'files', 'modules.mail.filters'),
          inline: (inline as unknown[] | undefined) ?? [],
        },
        sources,
        upload_attachments: r.bool(mail, 'upload_attachments', 'modules.mail', true),
        max_attachment_bytes: r.int(mail, 'max_attachment_bytes', 'modules.mail', d.modules.mail.max_attachment_bytes, 0),
        submit_concurrency: r.int(mail, 'submit_concurrency', 'modules.mail', d.modules.mail.submit_concurrency, 1, 32),
        batch_size: r.int(mail, 'batch_size', 'modules.mail', d.modules.mail.batch_size, 1, 1000),
        state: {
          clear_on_new_run: r.bool(st, 'clear_on_new_run', 'modules.mail.state', true),
          run_state_path: r.path(st, 'run_state_path', 'modules.mail.state', d.modules.mail.state.run_state_path),
          rejected_log_path: r.path(st, 'rejected_log_path', 'modules.mail.state', d.modules.mail.state.rejected_log_path),
          lock_file_path: r.path(st, 'lock_file_path', 'modules.mail.state', d.modules.mail.state.lock_file_path),
          rejected_retention_days: r.int(st, 'rejected_retention_days', 'modules.mail.state', 30, 1),
        },
      },
    },
  };

  // Environment overrides (spec §2.1). Their errors name the variable, not the file.
  const S = AGENT_SETTINGS;
  const fromEnv = <T>(setting: Setting<T>): T => {
    try {
      return read(env, setting);
    } catch (err) {
      if (err instanceof ConfigError) throw new AgentConfigError(`environment: ${err.message}`);
      throw err;
    }
  };
  cfg.port = fromEnv(S.SVC_PORT) ?? cfg.port;
  const envSecret = fromEnv(S.SVC_AUTH_SECRET);
  if (envSecret !== undefined) cfg.auth.secret = usableSecret(envSecret, true, 'environment: SVC_AUTH_SECRET');
  if (isSet(env, S.SVC_ALLOWED_HOSTS)) cfg.allowed_hosts = fromEnv(S.SVC_ALLOWED_HOSTS);
  try {
    parseAllowedHosts(cfg.allowed_hosts, env.SVC_ALLOWED_HOSTS?.trim() ? 'environment: SVC_ALLOWED_HOSTS' : `${file}: allowed_hosts`);
  } catch (err) {
    throw new AgentConfigError((err as Error).message);
  }
  cfg.gateway.base_url = fromEnv(S.SVC_GATEWAY_URL) ?? cfg.gateway.base_url;
  // The collector token is the gateway's AUTH_TOKEN (spec §5.3); SVC_GATEWAY_TOKEN names it for the agent alone.
  for (const setting of [S.SVC_GATEWAY_TOKEN, SERVER_SETTINGS.AUTH_TOKEN]) {
    const token = fromEnv(setting);
    if (!token) continue;
    cfg.gateway.auth_token = token;
    cfg.gateway.auth_token_source = setting.name;
    break;
  }
  cfg.logging.level = fromEnv(S.SVC_LOG_LEVEL) ?? cfg.logging.level;
  cfg.modules.mail.enabled = fromEnv(S.SVC_MAIL_ENABLED) ?? cfg.modules.mail.enabled;
  return cfg;
}

export interface LoadedAgentConfig {
  config: AgentConfig;
  /** The file read, or undefined when the default file does not exist (defaults only). */
  path: string | undefined;
  warnings: string[];
}

/** Reads, parses and validates the configuration file plus environment overrides. */
export function loadAgentConfig(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): LoadedAgentConfig {
  const env = opts.env ?? process.env;
  const explicit = opts.configPath !== undefined;
  const file = path.resolve(expandHome(opts.configPath ?? defaultConfigPath(env)));
  let text: string | undefined;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !explicit) text = undefined;
    else if (code === 'ENOENT') throw new AgentConfigError(`${file}: configuration file not found`);
    else throw new AgentConfigError(`${file}: cannot read configuration file (${code ?? (err as Error).message})`);
  }
  let raw: unknown;
  if (text !== undefined) {
    const doc = YAML.parseDocument(text, { prettyErrors: true });
    if (doc.errors.length > 0) {
      const e = doc.errors[0];
      const where = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
      throw new AgentConfigError(`${path.basename(file)}: invalid YAML${where}: ${e.message.split('\n')[0]}`);
    }
    raw = doc.toJS();
  }
  const config = validateAgentConfig(raw, path.basename(file), env);
  return { config, path: text === undefined ? undefined : file, warnings: configWarnings(config) };
}

/**
 * A secret that is set must be one: an empty one, or a placeholder (`changeme` of the sample files), is refused
 * rather than served with (issue 47). Unset is fine: a secret is generated (ensureAgentSecret).
 */
function usableSecret(secret: string, given: boolean, where: string): string {
  if (!given) return secret;
  if (secret.trim() === '') {
    throw new AgentConfigError(`${where} is empty: set a long random value, or leave it unset to have one generated`);
  }
  if (isPlaceholderSecret(secret)) {
    throw new AgentConfigError(`${where} is the placeholder "${secret.trim()}", not a secret: set a long random value, or leave it unset to have one generated`);
  }
  return secret;
}

/** Whether `secret` may guard the agent: set, and no placeholder. */
export function isUsableSecret(secret: string): boolean {
  return secret.trim() !== '' && !isPlaceholderSecret(secret);
}

/**
 * The configuration with its secret: the one set, else the one in `auth.secret_file`, generated there (mode 0600, in
 * a folder only the owner reads) on the first start — as the gateway keeps its token in DATA_DIR/auth-token.
 */
export function ensureAgentSecret(cfg: AgentConfig): { config: AgentConfig; file?: string; generated: boolean } {
  if (cfg.auth.secret) return { config: cfg, generated: false };
  const file = cfg.auth.secret_file;
  let generated = false;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    if (!fs.existsSync(file)) {
      // Written beside it and linked into place: a start killed half-way leaves no empty secret file, and of two
      // first starts at once one secret wins (link fails with EEXIST for the other).
      const scratch = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(scratch, `${crypto.randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
      try {
        fs.linkSync(scratch, file);
        generated = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      } finally {
        fs.rmSync(scratch, { force: true });
      }
    }
    const secret = fs.readFileSync(file, 'utf8').trim();
    if (!isUsableSecret(secret)) throw new AgentConfigError(`${file}: the secret file holds ${secret ? 'a placeholder' : 'nothing'}: remove it to have a new secret generated`);
    return { config: { ...cfg, auth: { ...cfg.auth, secret } }, file, generated };
  } catch (err) {
    if (err instanceof AgentConfigError) throw err;
    throw new AgentConfigError(`${file}: cannot keep the generated secret there (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set auth.secret_file, SVC_AUTH_SECRET or auth.secret`);
  }
}

export function configWarnings(cfg: AgentConfig): string[] {
  const w: string[] = [];
  if (cfg.modules.mail.enabled && cfg.modules.mail.sources.length === 0 && cfg.modules.mail.allowed_roots.length === 0) {
    w.push('modules.mail is enabled but no local source or allowed_roots is configured: /v1/email/parse will refuse every path');
  }
  return w;
}

export function isLoopbackAddress(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  // IP literals only: "localhost" can be mapped to any address in /etc/hosts.
  return h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** A deep copy with every secret replaced by a mask (only set secrets are masked; unset stay unset). */
export function maskSecrets(cfg: AgentConfig): AgentConfig {
  const copy = structuredClone(cfg);
  copy.auth.secret = copy.auth.secret ? SECRET_MASK : '';
  if (copy.gateway.auth_token) copy.gateway.auth_token = SECRET_MASK;
  if (copy.modules.fswatch.catalog_token) copy.modules.fswatch.catalog_token = SECRET_MASK;
  return copy;
}

/** Effective configuration as YAML with secrets masked, for `memex agent --print-config`. */
export function printableConfig(cfg: AgentConfig): string {
  const masked = maskSecrets(cfg) as unknown as Obj;
  // Drop undefined values so the YAML shows only what is set.
  return YAML.stringify(JSON.parse(JSON.stringify(masked)), { lineWidth: 0 });
}

/** pino level names for the spec's four levels. */
export function pinoLevel(level: AgentLogLevel): 'debug' | 'info' | 'warn' | 'error' {
  return level === 'warning' ? 'warn' : level;
}
