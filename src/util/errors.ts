/**
 * The base of memex's own errors. `code` is stable (clients and tests may match on it; messages may change);
 * `status` is the HTTP status the gateway answers with when such an error reaches it (src/gateway/errors.ts
 * maps every MemexError there, once), 500 when it is our fault. `loc` points at the part of the request that is
 * wrong, for the spec's 422 shape (`["query", "start_date"]`).
 */
export class MemexError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number = 500,
    readonly loc?: (string | number)[],
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** A command line the verb cannot run: the CLI prints the message and its usage, and exits 2. */
export class UsageError extends MemexError {
  constructor(message: string) {
    super(message, 'USAGE', 400);
  }
}

/** Something asked for is not there (a person to forget, a document). */
export class NotFoundError extends MemexError {
  constructor(message: string, code = 'NOT_FOUND') {
    super(message, code, 404);
  }
}
