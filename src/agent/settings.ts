/**
 * The host agent's environment variables (spec §2.1: they override the YAML file), apart from
 * src/agent/config.ts so that listing every setting (src/cli/settings.ts) does not load the YAML parser.
 */
import { bool, defineSettings, int, list, number, oneOf, string, url } from '../config/env.ts';

export const LOG_LEVELS = ['debug', 'info', 'warning', 'error'] as const;
export type AgentLogLevel = (typeof LOG_LEVELS)[number];

/** The variables that override the file (spec §2.1), and the agent's own. */
export const AGENT_SETTINGS = defineSettings('agent', 'Host agent (`memex agent`)', {
  SVC_PORT: int({ min: 1024, max: 65535, defaultText: '`port` of the file, else 7090', description: 'port of the agent (always on loopback)' }),
  SVC_AUTH_SECRET: string({
    secret: true,
    keepRaw: true,
    defaultText: '`auth.secret` of the file, else generated in `auth.secret_file`',
    description: 'secret clients send in the `auth.header` header; when neither sets one, a random one is generated on first start in `$XDG_STATE_HOME/memex/agent-secret` (mode 0600). Empty or a placeholder (`changeme`, …) is refused',
  }),
  SVC_ALLOWED_HOSTS: list({
    default: [],
    lowerCase: true,
    defaultText: '`allowed_hosts` of the file',
    description: 'host names (`name`, `name:port`, `*.domain`) the agent answers to besides `localhost`, `*.localhost` and IP addresses; any other `Host` gets 421, a page of another origin 403',
  }),
  SVC_GATEWAY_URL: url({ defaultText: '`gateway.base_url`, else `http://127.0.0.1:8085`', description: 'the memex server the collectors submit to' }),
  SVC_GATEWAY_TOKEN: string({ secret: true, defaultText: '`AUTH_TOKEN`, else `gateway.auth_token`', description: 'bearer token for the server (its `AUTH_TOKEN`)' }),
  SVC_LOG_LEVEL: oneOf(LOG_LEVELS, { aliases: { warn: 'warning' }, defaultText: '`logging.level`, else `info`', description: 'least severe level logged' }),
  SVC_MAIL_ENABLED: bool({ defaultText: '`modules.mail.enabled`, else `false`', description: 'switch the mail module on or off' }),
  SVC_COVERAGE_POLL_SECONDS: number({ default: 60, min: 0, description: "seconds between checks for the server's coverage requests; 0: never" }),
});

