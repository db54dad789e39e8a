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
  it('starts on loopback, warns about the placeholder secret, keeps secrets out of logs, and exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const cfg = path.join(dir, 'agent.yaml');
    fs.writeFileSync(cfg, `port: ${port}\nmodules:\n  mail:\n    enabled: true\n`);
    const child = spawn(process.execPath, ['--import', 'tsx', script, '--config', cfg], {
      env: { ...process.env, SVC_AUTH_SECRET: 'changeme', SVC_LOG_LEVEL: 'debug', XDG_CONFIG_HOME: dir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const deadline = Date.now() + 30_000;
      while (!out.includes('host agent listening')) {
        if (Date.now() > deadline) throw new Error(`agent did not start:\n${out}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const res = await fetch(`http://127.0.0.1:${port}/v1/health`, { headers: { 'x-auth': 'changeme' } });
      expect(res.status).toBe(200);
      const redact = await fetch(`http://127.0.0.1:${port}/v1/email/redact-pii`, {
        method: 'POST',
        headers: { 'x-auth': 'changeme', 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'call 617-555-0123 about SECRET-BODY-TEXT' }),
      });
      expect(await redact.json()).toEqual({ redacted_text: 'call [PHONE_REDACTED] about SECRET-BODY-TEXT' });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    expect(out).toMatch(/placeholder \\"changeme\\"|placeholder "changeme"/);
    expect(out).toContain('shutting down');
    expect(out).not.toContain('SECRET-BODY-TEXT');
    // The secret appears only inside the warning text, never as a logged header value.
    expect(out).not.toMatch(/"x-auth":\s*"changeme"/);
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
