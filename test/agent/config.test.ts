import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AgentConfigError,
  defaultConfigPath,
  loadAgentConfig,
  printableConfig,
  SECRET_MASK,
} from '../../src/agent/config.ts';
import { runAgentCommand } from '../../src/app/agent.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-agent-config-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

const noEnv = { HOME: os.homedir() } as NodeJS.ProcessEnv;

function loadError(text: string, env: NodeJS.ProcessEnv = noEnv): string {
  const p = write('agent.yaml', text);
  try {
    loadAgentConfig({ configPath: p, env });
  } catch (err) {
    expect(err).toBeInstanceOf(AgentConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a configuration error');
}

describe('agent configuration', () => {
  it('uses spec defaults when the default file does not exist', () => {
    const env = { HOME: os.homedir(), XDG_CONFIG_HOME: path.join(dir, 'nothing-here'), XDG_STATE_HOME: path.join(dir, 'state') };
    expect(defaultConfigPath(env)).toBe(path.join(dir, 'nothing-here', 'memex', 'agent.yaml'));
    const { config, path: used, warnings } = loadAgentConfig({ env });
    expect(used).toBeUndefined();
    expect(config.port).toBe(7090);
    expect(config.host).toBe('127.0.0.1');
    // No secret set: startAgent generates one in the state folder (ensureAgentSecret), never a placeholder.
    expect(config.auth).toEqual({ header: 'x-auth', secret: '', secret_file: path.join(dir, 'state', 'memex', 'agent-secret') });
    expect(config.allowed_hosts).toEqual([]);
    expect(config.gateway).toMatchObject({ ingest_path: '/v1/ingest', ingest_file_path: '/v1/ingest/file', timeout: 30 });
    expect(config.modules.ocr.languages).toEqual(['en']);
    expect(config.modules.mail.enabled).toBe(false);
    // Unset: the collectors decide by the gateway's address (store-redaction.ts).
    expect(config.modules.mail.redact_pii).toBeUndefined();
    expect(config.modules.mail.state.rejected_retention_days).toBe(30);
    expect(config.modules.mail.state.run_state_path.startsWith(path.join(dir, 'state', 'memex'))).toBe(true);
    expect(config.modules.contacts.enabled).toBe(false);
    expect(warnings.join('\n')).not.toMatch(/secret/);
  });

  it('refuses a placeholder or an empty secret, from the file or the environment', () => {
    expect(loadError('auth: { secret: changeme }\n')).toMatch(/^agent\.yaml: auth\.secret is the placeholder "changeme", not a secret/);
    expect(loadError('auth: { secret: "" }\n')).toMatch(/^agent\.yaml: auth\.secret is empty/);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_AUTH_SECRET: 'changeme' })).toMatch(/^environment: SVC_AUTH_SECRET is the placeholder "changeme"/);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_AUTH_SECRET: '' })).toMatch(/^environment: SVC_AUTH_SECRET is empty/);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_AUTH_SECRET: 'Secret' })).toMatch(/placeholder/);
  });

  it('reads allowed host names from the file and SVC_ALLOWED_HOSTS, and refuses a malformed one', () => {
    const p = write('hosts.yaml', 'auth: { secret: s3cret-enough }\nallowed_hosts: [Agent.Example, "*.lan:7090"]\n');
    expect(loadAgentConfig({ configPath: p, env: noEnv }).config.allowed_hosts).toEqual(['agent.example', '*.lan:7090']);
    expect(loadAgentConfig({ configPath: p, env: { ...noEnv, SVC_ALLOWED_HOSTS: 'proxy.example' } }).config.allowed_hosts).toEqual(['proxy.example']);
    expect(loadError('allowed_hosts: ["a b"]\n')).toMatch(/agent\.yaml: allowed_hosts: "a b" is not a host name/);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_ALLOWED_HOSTS: 'evil.example/x' })).toMatch(/environment: SVC_ALLOWED_HOSTS: "evil\.example\/x" is not a host name/);
  });

  it('reads every key of the spec from YAML', () => {
    const p = write(
      'full.yaml',
      `
port: 7191
auth: { secret: s3cret-value }
gateway: { base_url: "http://127.0.0.1:9000/", ingest_path: /v1/ingest, ingest_file_path: /v1/ingest/file, timeout: 12, auth_token: tok-123 }
modules:
  chatapp: { enabled: true, batch_size: 50, ocr_enabled: false }
  ocr: { enabled: true, languages: [en], timeout_ms: 2000, allowed_url_hosts: [Images.Example.org] }
  fswatch: { enabled: true, watches: [{ path: /tmp, glob: "*.pdf" }] }
  contacts: { enabled: true }
  calendar: { enabled: false }
  reminders: { enabled: false }
  notes: { enabled: false }
  faces: { enabled: false }
  mail:
    enabled: true
    redact_pii: { emails: true, phones: false }
    filters: { combination_mode: all, default_action: exclude, files: [~/filters.yaml] }
    sources:
      - { id: local-mail, type: local, source_path: ~/Library/Mail }
      - id: work
        type: imap
        host: imap.example.org
        username: me@example.org
        auth: { kind: xoauth2, secret_ref: "keychain://imap.example.org/me" }
        folders: [INBOX, Archive]
        redact_pii: false
    state: { clear_on_new_run: false, rejected_retention_days: 7 }
`,
    );
    const { config, warnings } = loadAgentConfig({ configPath: p, env: noEnv });
    expect(warnings).toEqual([]);
    expect(config.port).toBe(7191);
    expect(config.gateway.base_url).toBe('http://127.0.0.1:9000');
    expect(config.gateway.auth_token).toBe('tok-123');
    expect(config.modules.chatapp).toMatchObject({ enabled: true, batch_size: 50, ocr_enabled: false });
    expect(config.modules.ocr.allowed_url_hosts).toEqual(['images.example.org']);
    expect(config.modules.fswatch.watches).toHaveLength(1);
    expect(config.modules.mail.redact_pii).toEqual({ emails: true, phones: false, account_numbers: true, ssn: true });
    expect(config.modules.mail.filters).toMatchObject({ combination_mode: 'all', default_action: 'exclude' });
    expect(config.modules.mail.filters.files[0]).toBe(path.join(os.homedir(), 'filters.yaml'));
    expect(config.modules.mail.sources[0]).toMatchObject({ id: 'local-mail', type: 'local', source_path: path.join(os.homedir(), 'Library/Mail') });
    expect(config.modules.mail.sources[1]).toMatchObject({ type: 'imap', port: 993, tls: true, auth: { kind: 'xoauth2' }, redact_pii: false });
    expect(config.modules.mail.state).toMatchObject({ clear_on_new_run: false, rejected_retention_days: 7 });
  });

  it('gives readable errors naming the file and the key', () => {
    expect(loadError('modules:\n  ocr:\n    timeout_ms: fast\n')).toBe('agent.yaml: modules.ocr.timeout_ms must be an integer >= 1, got "fast"');
    expect(loadError('modules:\n  ocr:\n    timeout_ms: 0\n')).toMatch(/modules\.ocr\.timeout_ms must be an integer >= 1, got 0/);
    expect(loadError('port: 80\n')).toMatch(/^agent\.yaml: port must be an integer between 1024 and 65535, got 80$/);
    expect(loadError('modules:\n  mail:\n    enabeld: true\n')).toMatch(/unknown key modules\.mail\.enabeld/);
    expect(loadError('modules:\n  mail:\n    enabled: "yes"\n')).toMatch(/modules\.mail\.enabled must be true or false/);
    expect(loadError('modules:\n  mail:\n    redact_pii: { emails: 1 }\n')).toMatch(/modules\.mail\.redact_pii\.emails must be true or false/);
    expect(loadError('modules:\n  mail:\n    sources:\n      - { id: a, type: pop3 }\n')).toMatch(/modules\.mail\.sources\[0\]\.type must be one of local, imap/);
    expect(loadError('modules:\n  mail:\n    sources:\n      - { id: a, type: local }\n')).toMatch(/sources\[0\]\.source_path is required/);
    expect(loadError('modules:\n  mail:\n    sources:\n      - { id: a, type: imap, host: h, auth: { secret_ref: "vault://X" } }\n')).toMatch(/keychain:\/\//);
    expect(loadError('gateway:\n  base_url: ftp://x\n')).toMatch(/gateway\.base_url must be an http\(s\) URL/);
    expect(loadError('host: 0.0.0.0\n')).toMatch(/host must be a loopback address/);
    expect(loadError('modules: [1, 2]\n')).toMatch(/modules must be a mapping/);
    expect(loadError('port: [unclosed\n')).toMatch(/^agent\.yaml: invalid YAML \(line \d+, column \d+\)/);
    expect(() => loadAgentConfig({ configPath: path.join(dir, 'missing.yaml'), env: noEnv })).toThrow(/configuration file not found/);
  });

  it('applies environment overrides and validates them', () => {
    const p = write('env.yaml', 'port: 7100\nauth: { secret: from-file }\n');
    const { config, warnings } = loadAgentConfig({
      configPath: p,
      env: { ...noEnv, SVC_PORT: '7200', SVC_AUTH_SECRET: 'from-env', SVC_GATEWAY_URL: 'http://127.0.0.1:8085', SVC_LOG_LEVEL: 'warning', SVC_GATEWAY_TOKEN: 'gw' },
    });
    expect(config.port).toBe(7200);
    expect(config.auth.secret).toBe('from-env');
    expect(config.gateway.base_url).toBe('http://127.0.0.1:8085');
    expect(config.gateway.auth_token).toBe('gw');
    expect(config.logging.level).toBe('warning');
    expect(warnings).toEqual([]);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_PORT: 'abc' })).toMatch(/^environment: SVC_PORT must be an integer/);
    expect(loadError('port: 7100\n', { ...noEnv, SVC_LOG_LEVEL: 'loud' })).toMatch(/SVC_LOG_LEVEL must be one of debug, info, warning, error/);
  });

  it('prints the effective configuration with secrets masked', async () => {
    const p = write('print.yaml', 'auth: { secret: very-secret-value }\ngateway: { auth_token: gateway-token-value }\n');
    const { config } = loadAgentConfig({ configPath: p, env: noEnv });
    const text = printableConfig(config);
    expect(text).not.toContain('very-secret-value');
    expect(text).not.toContain('gateway-token-value');
    expect(text).toContain(SECRET_MASK);
    expect(text).toMatch(/port: 7090/);

    let out = '';
    let err = '';
    const code = await runAgentCommand(['--config', p, '--print-config'], { out: (s) => (out += s), err: (s) => (err += s), env: noEnv });
    expect(code).toBe(0);
    expect(out).toContain('ingest_path: /v1/ingest');
    expect(out).not.toContain('very-secret-value');

    const bad = write('bad.yaml', 'modules:\n  ocr:\n    timeout_ms: -5\n');
    err = '';
    expect(await runAgentCommand(['--config', bad], { out: () => {}, err: (s) => (err += s), env: noEnv })).toBe(2);
    expect(err).toMatch(/memex agent: bad\.yaml: modules\.ocr\.timeout_ms must be an integer >= 1, got -5/);
  });
});
