#!/usr/bin/env node
// Entry point of the `memex` command. TypeScript sources run through tsx's loader, so there is
// no build step between `npm ci` and `npm start`.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
