import { defineConfig } from 'vitest/config';
// @ts-expect-error plain ES module without type declarations
import { quickTestFiles } from './scripts/quick-tests.mjs';
import base from './vitest.config.ts';

// `npm run test:quick`: the test files scripts/quick-tests.mjs selects (no database, browser, Dovecot or
// child process), with a guard that fails any of them that opens a database or a browser anyway.
// (Not mergeConfig: it would append to the base's include instead of replacing it.)
export default defineConfig({ test: { ...base.test, include: quickTestFiles(), setupFiles: ['test/helpers/quick-guard.ts'] } });
