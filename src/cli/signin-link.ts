/**
 * `memex signin-link`: a fresh one-time sign-in link for the web UI, from the running server
 * (POST /v1/session/link with the bearer token found by the client rule, src/client/target.ts). `memex serve`
 * prints a link at start only to a terminal; this is how to get one when its output goes to a log.
 */
import { parseArgs } from 'node:util';
import { runningServer } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { usageMessage } from './usage.ts';

export const SIGNIN_LINK_USAGE = `usage: memex signin-link [--json]   a one-time sign-in link for the web UI of the running server
options: --url URL, --token TOKEN (as every client command)

The link signs one browser in once, within 24 hours; afterwards sign in with the token. It is a
secret until used: do not paste it where others read.`;

interface Output {
  out: (line: string) => void;
  err: (line: string) => void;
}

export async function runSigninLinkCommand(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  io: Output = { out: (l) => console.log(l), err: (l) => console.error(l) },
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        json: { type: 'boolean', default: false },
        url: { type: 'string' },
        token: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (err) {
    io.err(usageMessage('signin-link', (err as Error).message, SIGNIN_LINK_USAGE));
    return 2;
  }
  if (values.help) {
    io.out(SIGNIN_LINK_USAGE);
    return 0;
  }
  try {
    const flags = { url: values.url, token: values.token };
    const server = await runningServer(flags, env);
    if (!server) {
      io.err('memex signin-link: no memex server answers: start one with `memex serve`, or point --url / MEMEX_URL at it');
      return 1;
    }
    const link = await server.call('createSignInLink', {});
    if (values.json) io.out(JSON.stringify(link, null, 2));
    else {
      io.out(link.url);
      io.err(`(one-time sign-in link for the web UI, valid until ${link.expires_at.slice(0, 16).replace('T', ' ')} UTC)`);
    }
    return 0;
  } catch (err) {
    if (!(err instanceof ClientError)) throw err;
    io.err(`memex signin-link: ${err.message}`);
    return 1;
  }
}
