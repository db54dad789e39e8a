import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, 'fixtures', 'run-agent.ts');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-agent-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

describe('memex agent (daemon process)', () => {
  /** Starts `memex agent` with `env`; resolves once it listens (or rejects with its output). */
  function spawnAgent(cfg: string, env: NodeJS.ProcessEnv) {
    const child = spawn(process.execPath, ['--import', 'tsx', script, '--config', cfg], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const run = { child, out: '', exited: new Promise<number | null>((r) => child.on('exit', (code) => r(code))) };
    child.stdout.on('data', (d) => (run.out += d));
    child.stderr.on('data', (d) => (run.out += d));
    return run;
  }
  async function listening(run: ReturnType<typeof spawnAgent>): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!run.out.includes('host agent listening')) {
      if (Date.now() > deadline || run.child.exitCode !== null) throw new Error(`agent did not start:\n${run.out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('starts on loopback without a secret set: generates one (0600), says where, keeps it, keeps secrets out of logs, exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const cfg = path.join(dir, 'agent.yaml');
    const state = path.join(dir, 'state');
    fs.writeFileSync(cfg, `port: ${port}\nmodules:\n  mail:\n    enabled: true\n`);
    const env = { SVC_AUTH_SECRET: undefined, SVC_LOG_LEVEL: 'debug', XDG_CONFIG_HOME: dir, XDG_STATE_HOME: state };
    const file = path.join(state, 'memex', 'agent-secret');
    const first = spawnAgent(cfg, env);
    let secret = '';
    try {
      await listening(first);
      secret = fs.readFileSync(file, 'utf8').trim();
      expect(secret.length).toBeGreaterThanOrEqual(40);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(first.out).toContain(`generated the secret for x-auth in ${file} (mode 0600)`);
      expect((await fetch(`http://127.0.0.1:${port}/v1/health`, { headers: { 'x-auth': 'changeme' } })).status).toBe(401);
      const res = await fetch(`http://127.0.0.1:${port}/v1/health`, { headers: { 'x-auth': secret } });
      expect(res.status).toBe(200);
      const redact = await fetch(`http://127.0.0.1:${port}/v1/email/redact-pii`, {
        method: 'POST',
        headers: { 'x-auth': secret, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'call 617-555-0123 about SECRET-BODY-TEXT' }),
      });
      expect(await redact.json()).toEqual({ redacted_text: 'call [PHONE_REDACTED] about SECRET-BODY-TEXT' });
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
    expect(first.out).toContain('shutting down');
    expect(first.out).not.toContain('SECRET-BODY-TEXT');
    expect(first.out).not.toContain(secret);

    // The next start uses the kept secret: clients configured once keep working.
    const second = spawnAgent(cfg, env);
    try {
      await listening(second);
      expect(second.out).toContain(`the secret for x-auth is in ${file}`);
      expect(fs.readFileSync(file, 'utf8').trim()).toBe(secret);
      expect((await fetch(`http://127.0.0.1:${port}/v1/health`, { headers: { 'x-auth': secret } })).status).toBe(200);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      if (second.child.exitCode === null) second.child.kill('SIGKILL');
    }
    expect(second.out).not.toContain(secret);
  });

  it('refuses to start with the placeholder secret changeme, with exit code 2 and one clear line', async () => {
    const cfg = path.join(dir, 'placeholder.yaml');
    fs.writeFileSync(cfg, `port: ${await freePort()}\n`);
    const run = spawnAgent(cfg, { SVC_AUTH_SECRET: 'changeme', XDG_STATE_HOME: path.join(dir, 'state-placeholder') });
    expect(await run.exited).toBe(2);
    expect(run.out).toMatch(/^memex agent: environment: SVC_AUTH_SECRET is the placeholder "changeme", not a secret/m);
    expect(run.out).not.toContain('host agent listening');
    expect(fs.existsSync(path.join(dir, 'state-placeholder'))).toBe(false);
  });

  it('refuses a non-loopback host from the config file with exit code 2', async () => {
    const cfg = path.join(dir, 'public.yaml');
    fs.writeFileSync(cfg, 'host: 0.0.0.0\n');
    const child = spawn(process.execPath, ['--import', 'tsx', script, '--config', cfg], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    expect(code).toBe(2);
    expect(err).toMatch(/public\.yaml: host must be a loopback address/);
  });
});
