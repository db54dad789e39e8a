/**
 * `memex sessions`: the web UI's signed-in browsers (src/gateway/sessions.ts), and revoking them. Through the
 * running server when one answers (GET/DELETE /v1/sessions), else on the database.
 */
import type { Database } from '../db/types.ts';
import type { SessionInfoT } from '../schemas/sessions.ts';
import type { ServerClient } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { UsageError } from '../util/errors.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const SESSIONS_USAGE = `usage: memex sessions [--json]            the web UI's signed-in browsers, last used first
       memex sessions revoke ID...        sign those out (an id or its first 8 or more characters)
       memex sessions revoke --all        sign every browser out
options: --url URL, --token TOKEN (as every client command)

A session ends by itself after 30 days without use, and when the access token changes. Bearer-token
clients (the CLI, MCP, scripts) have no session and are not affected.`;

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** What the command needs, through the server or on the database. */
interface SessionStore {
  list(): Promise<SessionInfoT[]>;
  revoke(id: string): Promise<boolean>;
  revokeAll(): Promise<number>;
}

function viaServer(server: ServerClient): SessionStore {
  return {
    list: async () => (await server.call('listSessions', {})).sessions,
    revoke: async (id) => {
      try {
        await server.call('revokeSession', { params: { session_id: id } });
        return true;
      } catch (err) {
        if (err instanceof ClientError && err.status === 404) return false;
        throw err;
      }
    },
    revokeAll: async () => (await server.call('revokeOtherSessions', {})).revoked,
  };
}

/** "3 minutes ago", "yesterday", "12 days ago". */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - new Date(iso).getTime()) / 1000));
  if (s < 90) return 'just now';
  if (s < 90 * 60) return `${Math.round(s / 60)} minutes ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)} hours ago`;
  const days = Math.round(s / 86400);
  return days === 1 ? 'yesterday' : `${days} days ago`;
}

export function formatSessions(sessions: SessionInfoT[], now = Date.now()): string[] {
  if (!sessions.length) return ['no web sessions: no browser is signed in'];
  const rows = sessions.map((s) => [s.session_id, s.browser, `signed in ${s.created_at.slice(0, 16).replace('T', ' ')} UTC`, `last used ${ago(s.last_seen_at, now)}`]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return [
    `${sessions.length} web ${sessions.length === 1 ? 'session' : 'sessions'} (revoke with \`memex sessions revoke ID\`):`,
    ...rows.map((r) => `  ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')}`),
  ];
}

async function run(store: SessionStore, args: { revoke: boolean; ids: string[]; all: boolean; json: boolean }, io: Output): Promise<number> {
  if (!args.revoke) {
    const sessions = await store.list();
    if (args.json) io.out(JSON.stringify({ sessions }, null, 2));
    else for (const line of formatSessions(sessions)) io.out(line);
    return 0;
  }
  if (args.all) {
    const n = await store.revokeAll();
    io.out(`revoked ${n} web ${n === 1 ? 'session' : 'sessions'}: every browser must sign in again`);
    return 0;
  }
  const sessions = await store.list();
  let failed = 0;
  for (const given of args.ids) {
    const prefix = given.toLowerCase();
    const matches = prefix.length >= 8 ? sessions.filter((s) => s.session_id.startsWith(prefix)) : [];
    if (matches.length !== 1) {
      io.err(`memex sessions: ${matches.length ? `"${given}" names ${matches.length} sessions: give more of the id` : `no session "${given}" (\`memex sessions\` lists them)`}`);
      failed++;
      continue;
    }
    const s = matches[0];
    if (await store.revoke(s.session_id)) io.out(`revoked ${s.session_id} (${s.browser}, last used ${ago(s.last_seen_at)})`);
    else {
      io.err(`memex sessions: ${s.session_id} had already ended`);
      failed++;
    }
  }
  return failed ? 1 : 0;
}

export const SESSIONS = defineVerb({
  name: 'sessions',
  help: `  sessions [revoke ID... | revoke --all]
                                      the web UI's signed-in browsers, and signing them out (docs/ui.md)`,
  usage: SESSIONS_USAGE,
  server: 'optional',
  positionals: 'any',
  options: {
    all: { kind: 'boolean', description: 'revoke: every browser' },
    json: { kind: 'boolean', description: 'the list as JSON' },
  },
  async run({ args: positionals, values, out, err, serverOrDatabase, resolveTarget }) {
    const [verb = 'list', ...ids] = positionals;
    const revoke = verb === 'revoke';
    if ((verb !== 'list' && !revoke) || (!revoke && (ids.length || values.all)) || (revoke && values.all === ids.length > 0)) {
      throw new UsageError(revoke ? 'revoke takes session ids or --all' : `unknown use "${positionals.join(' ')}"`);
    }
    const io: Output = { out: (l) => out.write(`${l}\n`), err: (l) => err.write(`${l}\n`) };
    const args = { revoke, ids, all: values.all, json: values.json };
    return serverOrDatabase(
      (server) => run(viaServer(server), args, io),
      async (db) => {
        const { WebSessions } = await import('../gateway/sessions.ts');
        // Sessions belong to the access token the server uses, found the way every client finds it.
        const sessions = new WebSessions(db, resolveTarget().token);
        return run({ list: () => sessions.list(), revoke: (id) => sessions.revoke(id), revokeAll: () => sessions.revokeAll() }, args, io);
      },
    );
  },
});

export const runSessionsCommand = (argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(SESSIONS, argv, { ...io, openDatabase, env });
