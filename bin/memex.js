#!/usr/bin/env node
// Entry point of the `memex` command. Runs the compiled JavaScript in build/ (made by `npm ci` / `npm run build`)
// when it matches src/ exactly, else the TypeScript sources through tsx's loader: no stale code after an edit,
// and no build step needed between a fresh clone and `npm start`. MEMEX_FROM_SOURCE=1 always runs the sources.
import { pathToFileURL } from 'node:url';
import { freshCompiledEntry } from './compiled.js';

const compiled = process.env.MEMEX_FROM_SOURCE === '1' ? null : freshCompiledEntry();
if (compiled) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
