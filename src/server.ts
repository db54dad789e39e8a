/** `memex serve`'s composition root lives in src/app/server.ts; this path is kept for the tests and benches that import it. */
export * from './app/server.ts';
