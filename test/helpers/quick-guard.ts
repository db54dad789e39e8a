/**
 * Setup file of `npm run test:quick` (vitest.quick.config.ts): the quick subset must need no database and
 * no browser, so opening one fails the test with this message instead of the file quietly joining the
 * subset. A file that fails here needs a marker scripts/quick-tests.mjs recognises (import a test helper).
 */
import { vi } from 'vitest';

function refuse(what: string): never {
  throw new Error(`npm run test:quick: this test file opened ${what}; the quick subset is for tests that need none (see scripts/quick-tests.mjs)`);
}

vi.mock('../../src/db/index.ts', async (importOriginal) => ({
  ...(await importOriginal<object>()),
  openDatabase: () => refuse('a database'),
}));

vi.mock('pg', async (importOriginal) => {
  const pg = (await importOriginal<{ default: object }>()).default;
  class Client {
    constructor() {
      refuse('a PostgreSQL connection');
    }
  }
  class Pool {
    constructor() {
      refuse('a PostgreSQL pool');
    }
  }
  const mocked = { ...pg, Client, Pool };
  return { ...mocked, default: mocked };
});

vi.mock('playwright-core', () => ({
  chromium: { launch: () => refuse('a browser') },
}));
