import { ERROR_CODES, retryableOf, type ErrorCode, type ErrorCodeEntry } from './error-codes.ts';

export type { ErrorCode } from './error-codes.ts';

export interface MemexErrorOptions {
  /** The part of the request that is wrong, for the spec's 422 shape (`["query", "start_date"]`); `["body"]` when not given. */
  loc?: (string | number)[];
  /** The 422 item's `type` when this error's differs from its code's (`string_too_short`, `missing`). */
  type?: string;
  /** The envelope's `retryable` when this error's differs from its code's (src/util/error-codes.ts). */
  retryable?: boolean;
  cause?: unknown;
}

/**
 * The base of memex's own errors. `code` is one of src/util/error-codes.ts (stable: clients and tests may match on
 * it; messages may change); the table gives `status`, the HTTP status the gateway answers with when such an error
 * reaches it (src/gateway/errors.ts turns every MemexError into a body there, once), 500 when it is our fault.
 */
export class MemexError extends Error {
  readonly loc?: (string | number)[];
  /** The 422 detail item's `type`. */
  readonly type: string;
  /** Whether the same request, sent again, may succeed: the error envelope's `retryable`. */
  readonly retryable: boolean;

  /** `status` is the code's in the table; a caller that has the status at hand (a stored outcome) may pass it. */
  constructor(
    message: string,
    readonly code: ErrorCode,
    readonly status: number = ERROR_CODES[code].status,
    opts: MemexErrorOptions = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    const entry: ErrorCodeEntry = ERROR_CODES[code];
    this.loc = opts.loc;
    this.type = opts.type ?? entry.type ?? code;
    this.retryable = opts.retryable ?? retryableOf(entry, status);
  }
}

/**
 * A MemexError class whose every instance carries `code`, for an error that needs nothing but its message (and a
 * cause): `export class ZipError extends codedError('IMPORT.BAD_ARCHIVE') {}`.
 */
export function codedError(code: ErrorCode) {
  return class extends MemexError {
    constructor(message: string, options?: ErrorOptions) {
      super(message, code, undefined, options);
    }
  };
}

/** A command line the verb cannot run: the CLI prints the message and its usage, and exits 2. */
export class UsageError extends MemexError {
  constructor(message: string) {
    super(message, 'USAGE');
  }
}

/** Something asked for is not there (a person to forget, a document): 404 `{detail}`. */
export class NotFoundError extends MemexError {
  constructor(message: string, code: ErrorCode = 'NOT_FOUND') {
    super(message, code);
  }
}

/** One wrong part of a request, as an item of the spec's 422 `detail` list (`type` the code's when not given). */
export interface RequestProblem {
  loc: (string | number)[];
  msg: string;
  type?: string;
}

/**
 * Request values a route refuses after its schema accepted them: 422 in the spec's shape, one `detail` item per
 * problem (a check that finds several reports them all at once).
 */
export class InvalidRequestError extends MemexError {
  readonly problems: readonly RequestProblem[];

  constructor(problems: RequestProblem | readonly RequestProblem[]) {
    const all = Array.isArray(problems) ? problems : [problems as RequestProblem];
    super(all.map((p) => p.msg).join('; '), 'VALIDATION', undefined, { loc: all[0]?.loc, type: all[0]?.type });
    this.problems = all;
  }
}

/** The request cannot be carried out in the server's present state or setup: 409 `{detail}`. */
export class ConflictError extends MemexError {
  constructor(message: string) {
    super(message, 'CONFLICT');
  }
}

/** No credentials, or an ended session: 401 `{detail}`. */
export class UnauthenticatedError extends MemexError {
  constructor(message: string) {
    super(message, 'UNAUTHENTICATED');
  }
}

/** Credentials that are not valid for the request: 403 `{detail}`. */
export class ForbiddenError extends MemexError {
  constructor(message: string) {
    super(message, 'FORBIDDEN');
  }
}
