/**
 * An embedding pool thread (src/embedding/pool.ts) that starts and then never answers: a model busy with a long
 * batch, as a bulk batch is on a loaded machine. Used to show that closing the pool does not wait for it.
 */
import { parentPort } from 'node:worker_threads';

parentPort!.postMessage({ type: 'ready', name: 'stuck', dimensions: 4 });
parentPort!.on('message', () => undefined);
