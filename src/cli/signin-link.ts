/**
 * `memex signin-link`: a fresh one-time sign-in link for the web UI, from the running server
 * (POST /v1/session/link with the bearer token found by the client rule, src/client/target.ts). `memex serve`
 * prints a link at start only to a terminal; this is how to get one when its output goes to a log.
 */
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const SIGNIN_LINK_USAGE = `usage: memex signin-link [--json]   a one-time sign-in link for the web UI of the running server
options: --url URL, --token TOKEN (as every client command)

The link signs one browser in once, within 24 hours; afterwards sign in with the token. It is a
secret until used: do not paste it where others read.`;

export const SIGNIN_LINK = defineVerb({
  name: 'signin-link',
  help: `  signin-link [--json]                a one-time sign-in link for the web UI of the running server`,
  usage: SIGNIN_LINK_USAGE,
  server: 'optional',
  options: { json: { kind: 'boolean', description: "print the server's JSON answer" } },
  async run({ values, out, err, say, runningServer }) {
    const server = await runningServer();
    if (!server) {
      say('no memex server answers: start one with `memex serve`, or point --url / MEMEX_URL at it');
      return 1;
    }
    const link = await server.call('createSignInLink', {});
    if (values.json) out.write(`${JSON.stringify(link, null, 2)}\n`);
    else {
      out.write(`${link.url}\n`);
      err.write(`(one-time sign-in link for the web UI, valid until ${link.expires_at.slice(0, 16).replace('T', ' ')} UTC)\n`);
    }
  },
});

export const runSigninLinkCommand = (argv: string[], env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(SIGNIN_LINK, argv, { ...io, env });
