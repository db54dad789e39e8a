/**
 * An embedding pool thread (src/embedding/pool.ts) whose model fails to start the first
 * POOL_TEST_FAILING_STARTS times, then the real thread (src/embedding/thread.ts). Starts are counted in the
 * file POOL_TEST_STARTS_FILE, one line each, because every try is a fresh thread. POOL_TEST_ERROR_NAME names
 * the error (ConfigError: a configuration error, which the pool does not retry).
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';

const file = process.env.POOL_TEST_STARTS_FILE!;
fs.appendFileSync(file, 'start\n');
const starts = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
if (starts <= Number(process.env.POOL_TEST_FAILING_STARTS)) {
  const error = `Backend 'wasm' has not yet been initialized (start ${starts})`;
  parentPort!.postMessage({ type: 'init-error', error, errorName: process.env.POOL_TEST_ERROR_NAME ?? 'Error' });
} else {
  await import('../../src/embedding/thread.ts');
}
