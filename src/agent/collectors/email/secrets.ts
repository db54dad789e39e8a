/**
 * Secret references for mail credentials (host-agent spec §2.1, §5; spec-notes B2.1):
 *
 *   keychain://<service>/<account>  macOS: `security find-generic-password -s <service> -a <account> -w`
 *                                   Linux: `secret-tool lookup service <service> account <account>` (libsecret)
 *   env://NAME                      the environment variable NAME (servers, containers)
 *   file://PATH                     the file's content, trailing newline removed (`~` expanded)
 *
 * Resolved secrets live in memory for one request and are never logged or persisted; errors name the
 * reference, never the value.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { expandHome } from '../../config.ts';
import { codedError } from '../../../util/errors.ts';

export class SecretError extends codedError('AGENT.SECRET_UNRESOLVED') {
  override name = 'SecretError';
}

export const SECRET_REF_PATTERN = /^(keychain:\/\/[^/]+\/.+|env:\/\/[A-Za-z_][A-Za-z0-9_]*|file:\/\/.+)$/;

export interface SecretResolverOptions {
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
  /** Runs a helper tool; injectable so the argument building can be checked without a keychain. */
  run?: (cmd: string, args: string[]) => Promise<string>;
}

const MAX_SECRET_BYTES = 64 * 1024;

function runTool(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 10_000, maxBuffer: MAX_SECRET_BYTES, encoding: 'utf8' }, (err, stdout) => {
      if (err) reject(err);
      else resolve(stdout);
    });
  });
}

function stripNewline(s: string): string {
  return s.replace(/\r?\n$/, '');
}

export async function resolveSecretRef(ref: string, opts: SecretResolverOptions = {}): Promise<string> {
  const env = opts.env ?? process.env;
  const platform = opts.platform ?? process.platform;
  const run = opts.run ?? runTool;
  if (!SECRET_REF_PATTERN.test(ref)) {
    throw new SecretError(`Unsupported secret reference "${ref}": use keychain://<service>/<account>, env://NAME or file://PATH`);
  }
  if (ref.startsWith('env://')) {
    const name = ref.slice('env://'.length);
    const v = env[name];
    if (v === undefined || v === '') throw new SecretError(`Secret reference ${ref}: environment variable ${name} is not set`);
    return v;
  }
  if (ref.startsWith('file://')) {
    const p = path.resolve(expandHome(decodeURIComponent(ref.slice('file://'.length))));
    let text: string;
    try {
      const st = await fs.stat(p);
      if (!st.isFile()) throw new SecretError(`Secret reference ${ref}: not a file`);
      if (st.size > MAX_SECRET_BYTES) throw new SecretError(`Secret reference ${ref}: file larger than ${MAX_SECRET_BYTES} bytes`);
      text = await fs.readFile(p, 'utf8');
    } catch (err) {
      if (err instanceof SecretError) throw err;
      throw new SecretError(`Secret reference ${ref}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const v = stripNewline(text);
    if (!v) throw new SecretError(`Secret reference ${ref}: the file is empty`);
    return v;
  }
  // keychain://service/account — service is the URL host, account the path without its slashes.
  const rest = ref.slice('keychain://'.length);
  const slash = rest.indexOf('/');
  const service = decodeURIComponent(rest.slice(0, slash));
  const account = decodeURIComponent(rest.slice(slash + 1).replace(/^\/+|\/+$/g, ''));
  let cmd: string;
  let args: string[];
  if (platform === 'darwin') {
    cmd = 'security';
    args = ['find-generic-password', '-s', service, '-a', account, '-w'];
  } else if (platform === 'linux' || platform === 'freebsd' || platform === 'openbsd') {
    cmd = 'secret-tool';
    args = ['lookup', 'service', service, 'account', account];
  } else {
    throw new SecretError(`Secret reference ${ref}: no keychain support on ${platform}; use env:// or file://`);
  }
  let out: string;
  try {
    out = await run(cmd, args);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { code?: string | number };
    if (e.code === 'ENOENT') {
      throw new SecretError(
        `Secret reference ${ref}: the ${cmd} tool is not installed${cmd === 'secret-tool' ? ' (Debian/Ubuntu: apt install libsecret-tools)' : ''}`,
      );
    }
    throw new SecretError(`Secret reference ${ref}: no such item in the ${platform === 'darwin' ? 'login keychain' : 'secret service'} (${cmd} failed)`);
  }
  const v = stripNewline(out);
  if (!v) throw new SecretError(`Secret reference ${ref}: no such item (empty answer from ${cmd})`);
  return v;
}
