/**
 * Secret references (env://, file://, keychain:// on macOS and Linux) and the run-state files: daily
 * rejected logs with retention, atomic state writes, a corrupt state kept aside, the lock file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveSecretRef } from '../../src/agent/collectors/email/secrets.ts';
import { acquireLock, appendRejected, loadState, pruneRejectedLogs, rejectedLogFile, saveState, emptyState, LockHeldError, StateSavePacer } from '../../src/agent/collectors/email/run-state.ts';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { tmpDir } from './helpers.ts';

describe('secret references', () => {
  it('env:// and file:// resolve; the file\'s trailing newline is dropped', async () => {
    expect(await resolveSecretRef('env://MY_PW', { env: { MY_PW: 's3cret' } })).toBe('s3cret');
    const dir = tmpDir('memex-secret-');
    fs.writeFileSync(path.join(dir, 'pw'), 'from-file\n', { mode: 0o600 });
    expect(await resolveSecretRef(`file://${path.join(dir, 'pw')}`)).toBe('from-file');
  });

  it('clear errors that name the reference, never a value', async () => {
    await expect(resolveSecretRef('env://NOPE_NOT_SET', { env: {} })).rejects.toThrow(/env:\/\/NOPE_NOT_SET: environment variable NOPE_NOT_SET is not set/);
    await expect(resolveSecretRef('file:///no/such/file')).rejects.toThrow(/cannot read the file \(ENOENT\)/);
    await expect(resolveSecretRef('vault://x/y')).rejects.toThrow(/Unsupported secret reference/);
  });

  it('keychain:// runs `security` on macOS and `secret-tool` on Linux with service and account', async () => {
    const calls: Array<[string, string[]]> = [];
    const run = async (cmd: string, args: string[]) => {
      calls.push([cmd, args]);
      return 'pw-from-keychain\n';
    };
    expect(await resolveSecretRef('keychain://imap.example.org/me@example.org', { platform: 'darwin', run })).toBe('pw-from-keychain');
    expect(await resolveSecretRef('keychain://imap.example.org/me@example.org', { platform: 'linux', run })).toBe('pw-from-keychain');
    expect(calls).toEqual([
      ['security', ['find-generic-password', '-s', 'imap.example.org', '-a', 'me@example.org', '-w']],
      ['secret-tool', ['lookup', 'service', 'imap.example.org', 'account', 'me@example.org']],
    ]);
  });

  it('keychain:// on Linux with the real secret-tool: a clear error when it is missing or has no such item', async () => {
    await expect(resolveSecretRef('keychain://memex-test-service/nobody', { platform: 'linux' })).rejects.toThrow(
      /keychain:\/\/memex-test-service\/nobody: (the secret-tool tool is not installed|no such item)/,
    );
  });

  it('configuration accepts keychain://, env:// and file:// references and refuses others', () => {
    const cfg = (ref: string) =>
      validateAgentConfig({ modules: { mail: { sources: [{ id: 'w', type: 'imap', host: 'h', auth: { kind: 'XOAUTH2', secret_ref: ref } }] } } }, 'agent.yaml', {});
    expect(cfg('env://IMAP_PW').modules.mail.sources[0].auth).toEqual({ kind: 'xoauth2', secret_ref: 'env://IMAP_PW' });
    expect(cfg('file:///run/secrets/imap').modules.mail.sources[0].starttls).toBe(true);
    expect(() => cfg('plain-password')).toThrow(/secret_ref must look like keychain/);
  });
});

describe('rejected log and run state files', () => {
  it('one NDJSON file per UTC day; files older than the retention are pruned', () => {
    const dir = tmpDir('memex-rej-');
    const log = path.join(dir, 'rejected_emails.log');
    const rec = { timestamp: 't', rowID: null, externalID: 'email:x', idempotencyKey: 'k', contentSHA: 'c', attempts: 1, lastServerResponse: { status: 422, body: '{}' } };
    const f1 = appendRejected(log, rec, new Date('2026-01-01T23:59:00Z'));
    appendRejected(log, rec, new Date('2026-01-01T01:00:00Z'));
    const f2 = appendRejected(log, rec, new Date('2026-01-02T00:00:01Z'));
    expect(path.basename(f1)).toBe('rejected_emails-2026-01-01.log');
    expect(path.basename(f2)).toBe('rejected_emails-2026-01-02.log');
    expect(fs.readFileSync(f1, 'utf8').trim().split('\n').map((l) => JSON.parse(l).externalID)).toEqual(['email:x', 'email:x']);
    fs.writeFileSync(path.join(dir, 'unrelated-2020-01-01.log'), 'keep');
    const removed = pruneRejectedLogs(log, 30, new Date('2026-02-01T12:00:00Z'));
    expect(removed).toEqual(['rejected_emails-2026-01-01.log']);
    expect(fs.existsSync(f2)).toBe(true);
    expect(fs.existsSync(path.join(dir, 'unrelated-2020-01-01.log'))).toBe(true);
    expect(rejectedLogFile(log, new Date('2026-03-04T00:00:00Z'))).toBe(path.join(dir, 'rejected_emails-2026-03-04.log'));
  });

  it('state round-trips; a corrupt state file is kept aside, not silently overwritten', () => {
    const dir = tmpDir('memex-state-');
    const file = path.join(dir, 'state.json');
    const s = emptyState();
    s.accepted.k = { source_id: 'email:a', path: null, doc_id: null, accepted_at: 'now' };
    saveState(file, s);
    expect(loadState(file).accepted.k.source_id).toBe('email:a');
    fs.writeFileSync(file, '{"accepted": {');
    expect(loadState(file)).toEqual(emptyState());
    expect(fs.readdirSync(dir).some((n) => n.startsWith('state.json.corrupt-'))).toBe(true);
  });

  it('lock: second holder in the same process is refused while the first holds it', () => {
    const lockPath = path.join(tmpDir('memex-lock-'), 'l.lock');
    fs.writeFileSync(lockPath, JSON.stringify({ pid: process.ppid, host: os.hostname() }));
    expect(() => acquireLock(lockPath)).toThrow(LockHeldError);
    fs.rmSync(lockPath);
    const l = acquireLock(lockPath);
    expect(JSON.parse(fs.readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    l.release();
    expect(fs.existsSync(lockPath)).toBe(false);
  });
});

describe('saving the run state during a long run', () => {
  /** Saves, and messages written in all (the state holds every message so far), for a run of `total` messages. */
  function run(total: number, opts: { held?: number; msPerBatch?: number } = {}) {
    let clock = 0;
    const pacer = new StateSavePacer(opts.held ?? 0, () => clock);
    let held = opts.held ?? 0;
    let saves = 0;
    let written = 0;
    for (let n = 0; n < total; n += 100) {
      clock += opts.msPerBatch ?? 0;
      held += 100;
      if (pacer.add(100)) {
        saves++;
        written += held;
      }
    }
    return { saves, written };
  }

  it('writes an amount linear in the messages, not quadratic (a 100,000-message mailbox)', () => {
    const { saves, written } = run(100_000);
    expect(saves).toBeGreaterThan(5);
    expect(written).toBeLessThanOrEqual(5 * 100_000);
  });

  it('saves a small state every 200 messages, and a large one at least every 30 s', () => {
    expect(run(800).saves).toBe(4);
    // A state holding a million messages, 10 s per batch: a save every three batches.
    expect(run(3000, { held: 1_000_000, msPerBatch: 10_000 }).saves).toBe(10);
    expect(run(3000, { held: 1_000_000 }).saves).toBe(0);
  });

  it('counts the accepted messages a new run keeps, not only its entries', () => {
    // A new run clears accepted messages from `entries` (clear_on_new_run); the file still holds them all.
    const state = emptyState();
    for (let i = 0; i < 100_000; i++) state.accepted[`k${i}`] = { source_id: `s${i}`, path: `/m/${i}.emlx`, doc_id: 'd', accepted_at: '2026-01-01T00:00:00Z' };
    const pacer = StateSavePacer.forState(state, () => 0);
    let saves = 0;
    for (let n = 0; n < 2000; n += 100) if (pacer.add(100)) saves++;
    expect(saves).toBe(0);
  });
});
