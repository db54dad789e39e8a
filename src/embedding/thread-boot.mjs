// Worker-thread entry. The main process runs TypeScript through tsx's loader, but a worker thread
// starts without it (`new Worker('x.ts')` fails with "Unknown file extension .ts"), so register
// tsx here first and then import the TypeScript entry named in workerData.
import { register } from 'tsx/esm/api';
import { workerData } from 'node:worker_threads';

register();
await import(workerData.entry);
