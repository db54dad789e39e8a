import { defineConfig } from 'vitest/config';

// Each test file gets its own database (in-memory PGlite, or a fresh database on the PostgreSQL
// server), so files run in parallel; two at a time fits this project's 2-core machines.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
