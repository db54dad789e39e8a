/**
 * The `memex` command as a user runs it: bin/memex.js in a child process, with exactly the environment given
 * (nothing inherited, so a developer's MEMEX_URL or AUTH_TOKEN never reaches it). Shared by the tests of the
 * CLI verbs.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

export const MEMEX_BIN = path.resolve(import.meta.dirname, '../../bin/memex.js');

export interface MemexRun {
  /** Exit status; null when the process was killed (the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface MemexRunOptions {
  /** Options for node itself, before the script. */
  nodeArgs?: string[];
  cwd?: string;
  /** Killed after this long (default 120 s). */
  timeoutMs?: number;
}

/** Runs `memex ARGS`; resolves with the exit status and both outputs whatever the status. */
export function runMemex(args: string[], env: NodeJS.ProcessEnv, opts: MemexRunOptions = {}): Promise<MemexRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), MEMEX_BIN, ...args], {
      cwd: opts.cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: opts.timeoutMs ?? 120_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
