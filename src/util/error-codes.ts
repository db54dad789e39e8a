/**
 * Every error code memex uses, once: the HTTP status the gateway answers with, what the code means, and how the
 * answer's body is shaped. A MemexError carries one of these codes (src/util/errors.ts); src/gateway/errors.ts turns
 * it into the body; docs/errors.md is written from this table (scripts/error-docs.ts, drift-tested).
 *
 * Codes are stable: clients and tests may match on them (messages may change). Codes with a dot name their area
 * (`INGEST.EMPTY_TEXT`, the spec's error-envelope codes among them); the others are memex's own.
 */

export interface ErrorCodeEntry {
  /** The status the gateway answers with; 500 for a fault of ours or a code that never reaches a client. */
  readonly status: number;
  /** What the code means, as docs/errors.md shows it. */
  readonly meaning: string;
  /** 422 only: the `type` of the spec's detail item (`[{loc, msg, type}]`); the code itself when not given. */
  readonly type?: string;
  /**
   * What a 4xx body carries beside its `detail` string: `error_code` (the code), `error` (the spec's error
   * envelope, as ingest refusals carry it), or nothing more (the default). A 5xx code with an envelope is answered
   * with its status and this body too (a server condition a client can wait out); other 5xx are the gateway's own.
   */
  readonly body?: 'error_code' | 'envelope';
  /**
   * The envelope's `retryable`: whether the same request, sent again unchanged, may succeed. When not given, a 5xx
   * or 429 is and any other status is not. A MemexError may say otherwise for itself (MemexErrorOptions.retryable).
   */
  readonly retryable?: boolean;
  /** Seconds the answer's `Retry-After` header asks a client to wait before sending the request again. */
  readonly retryAfterSeconds?: number;
  /** Never leaves the program that raised it (control flow, a program's own failure): not an HTTP answer. */
  readonly internal?: boolean;
}

export const ERROR_CODES = {
  // Requests the gateway refuses, thrown by its routes.
  NOT_FOUND: { status: 404, meaning: 'What the request names (a document, person, file, source, session…) is not there' },
  VALIDATION: { status: 422, type: 'value_error', meaning: 'A value of the request is not acceptable (the spec\'s 422 detail list says where)' },
  UNAUTHENTICATED: { status: 401, meaning: 'No credentials were given, or the session has ended: sign in' },
  FORBIDDEN: { status: 403, meaning: 'The credentials given are not valid for this request' },
  CONFLICT: { status: 409, meaning: 'The request cannot be carried out in the server\'s present state or setup' },
  USAGE: { status: 400, body: 'error_code', meaning: 'A command line or argument the verb cannot run (the CLI prints its usage and exits 2)' },
  INDEX_NOT_READY: { status: 503, meaning: 'The search index is still being built: `detail`, `phase`, `progress` and `retry-after` say when to ask again' },

  // The catalog.
  'DOCUMENT.NOT_FOUND': { status: 404, body: 'error_code', meaning: 'No document has this id' },
  'DOCUMENT.NOT_ACTIVE': { status: 409, body: 'error_code', meaning: 'The document was superseded or deleted: change its active version' },
  'DOCUMENT.INVALID_ID': { status: 422, meaning: 'A document id that is not a UUID' },
  'UPDATE.INVALID_DOC_ID': { status: 422, meaning: 'A document update naming an id that is not a UUID' },
  'INPUT.TOO_DEEP': { status: 422, type: 'too_deep', meaning: 'JSON nested deeper than the gateway accepts' },

  // Ingest (the spec's error-envelope codes).
  'INGEST.VALIDATION_ERROR': { status: 422, meaning: 'One item of a batch or multipart upload is not valid (its detail list says where)' },
  'INGEST.INVALID_ENVELOPE': { status: 422, body: 'envelope', meaning: 'A v2 envelope that is not valid' },
  'INGEST.UNSUPPORTED_MEDIA_TYPE': { status: 415, body: 'envelope', meaning: 'content.mime_type is not text: files go to /v1/ingest/file' },
  'INGEST.INVALID_BASE64': { status: 422, type: 'base64_decode', meaning: 'content.data is not valid base64' },
  'INGEST.INVALID_UTF8': { status: 422, type: 'utf8_decode', meaning: 'A base64 payload that is not UTF-8 text' },
  'INGEST.EMPTY_TEXT': { status: 422, meaning: 'The text is empty after normalisation' },
  'INGEST.INVALID_TIMESTAMP_TYPE': { status: 422, meaning: 'content_timestamp_type is not one of the spec\'s timestamp types' },
  'INGEST.IDENTITY_TOO_LONG': { status: 422, meaning: 'The fields that identify a document are longer than the catalog can index' },
  'INGEST.FIELD_TOO_LONG': { status: 422, meaning: 'A field (canonical_uri) is longer than the catalog accepts' },
  'INGEST.CONSTRAINT_VIOLATION': { status: 422, meaning: 'The document breaks a rule of the catalog\'s tables' },
  'INGEST.CONCURRENT_SUBMISSION': { status: 409, body: 'error_code', meaning: 'The same submission is being ingested concurrently: retry' },
  'INGEST.REJECTED': { status: 400, meaning: 'A batch item refused for a reason without a code of its own' },
  'INGEST.MULTIPART_LIMIT': { status: 413, body: 'envelope', meaning: 'A multipart upload with too many parts, files or fields' },
  'INGEST.FILE_READ_FAILED': { status: 400, body: 'envelope', retryable: true, meaning: 'The upload could not be read (a truncated or malformed multipart body): send it again' },
  'INGEST.FILE_TOO_LARGE': { status: 413, body: 'envelope', meaning: 'The file is larger than FILE_MAX_BYTES' },
  'INGEST.EMPTY_FILE': { status: 400, body: 'envelope', meaning: 'The uploaded file is empty' },
  'INGEST.OCR_UNAVAILABLE': { status: 503, body: 'envelope', retryAfterSeconds: 5, meaning: 'The file needs OCR and the OCR engine is busy or absent: send it again later' },
  'INGEST.OBJECT_STORE_UNAVAILABLE': { status: 503, body: 'envelope', meaning: 'The object store cannot be reached: send the file again later' },
  'INGEST.OBJECT_STORE_WRITE_FAILED': { status: 503, body: 'envelope', meaning: 'Writing the file to the object store failed: send it again later' },
  'INGEST.BATCH_MISSING_RESULT': { status: 500, internal: true, meaning: 'A batch answer without a result for one of the documents sent (the collector retries it)' },
  'INGEST.BATCH_UNEXPECTED_ERROR': { status: 500, meaning: 'A fault of ours while cataloging one item of a batch' },
  'INGEST.UNEXPECTED_ERROR': { status: 500, meaning: 'A fault of ours while ingesting one file of a batch' },
  'ORIGINAL.INVALID_DOC_ID': { status: 422, meaning: 'An original sent for a document id that is not a UUID' },
  'ORIGINAL.NOT_A_MESSAGE': { status: 422, meaning: 'An original sent for a document that is not a message' },
  'EMBEDDING.INVALID': { status: 422, type: 'value_error', meaning: 'An embedding that is not valid: no vector, values not finite, a chunk id that is no UUID, a bad model name' },
  'EMBEDDING.DIMENSION_MISMATCH': { status: 400, meaning: 'Vector dimensions mismatch: the vector\'s length is not the model\'s' },
  'EMBEDDING.UNKNOWN_CHUNK': { status: 404, meaning: 'An embedding for a chunk id the catalog does not have' },
  'EMBEDDING.MODEL_NOT_ACCEPTED': { status: 409, meaning: 'Vectors of a model that is neither the active one nor the one being re-indexed to' },
  'EMBEDDING.FAILED': { status: 500, meaning: 'Some chunks of the document could not be embedded (in its ingest status)' },
  'FILE.NOT_FOUND': { status: 404, meaning: 'The object store holds no object under this key' },
  'FILE.INVALID_OBJECT_KEY': { status: 400, meaning: 'An object key that is not one the store writes' },
  'STORAGE.DISK_FULL': { status: 507, body: 'envelope', meaning: 'The disk holding DATA_DIR (or the database) is full: nothing was stored' },

  // People (v2 person envelopes).
  'PEOPLE.NOT_FOUND': { status: 404, body: 'envelope', meaning: 'No person has this external_id' },
  'PEOPLE.STALE_VERSION': { status: 409, body: 'envelope', meaning: 'A person card older than the stored version' },

  // Requests refused for their host or origin (DNS rebinding, cross-site pages).
  'REQUEST.HOST_NOT_ALLOWED': { status: 421, body: 'envelope', meaning: 'The Host header names a server this one does not answer to (ALLOWED_HOSTS)' },
  'REQUEST.ORIGIN_NOT_ALLOWED': { status: 403, body: 'envelope', meaning: 'A request from a page origin this server does not trust (ALLOWED_ORIGINS)' },

  // Search and ask.
  'LLM.FAILED': { status: 500, meaning: 'The language model for ask could not answer (unreachable, refused, malformed); ask says why in its answer' },
  'SEARCH.VECTOR_TIMEOUT': { status: 500, internal: true, meaning: 'The k-NN leg did not finish in time: the search answers without it' },

  // Embeddings, inside the worker.
  'EMBEDDING.PROVIDER_UNAVAILABLE': { status: 500, internal: true, meaning: 'The embedding provider cannot be reached: the chunks go back to pending' },
  'EMBEDDING.REQUEST_REFUSED': { status: 500, internal: true, meaning: 'The embedding provider refused the input: the chunks become failed' },
  'EMBEDDING.PROVIDER_HTTP': { status: 500, internal: true, meaning: 'An HTTP status from the embedding provider, retried when it is 429 or 5xx' },
  'EMBEDDING.REINDEX': { status: 500, meaning: 'A re-index that cannot start (the model named, or one already under way)' },

  // Files.
  'FILE.HTML_CONVERSION': { status: 500, internal: true, meaning: 'An HTML file could not be converted to text (too large, too slow): its extraction fails' },

  // Imports and the CLI.
  'IMPORT.UNREADABLE': { status: 500, internal: true, meaning: 'An export file that is not what its importer reads (chat exports, browser files, notes)' },
  'IMPORT.BAD_ARCHIVE': { status: 500, internal: true, meaning: 'A zip or tar archive that cannot be read' },
  'CONFIG.INVALID': { status: 500, internal: true, meaning: 'A setting (environment variable) that is not valid: the program names it and does not start' },
  'DATABASE.LOCKED': { status: 500, internal: true, meaning: 'The embedded database is open in another process (PGlite serves one)' },
  'SQLITE.FAILED': { status: 500, internal: true, meaning: 'A SQLite database (chat.db, browser history) could not be read' },

  // The host agent (answered by the agent itself, with its own statuses).
  'AGENT.SECRET_UNRESOLVED': { status: 500, internal: true, meaning: 'A secret reference (keychain://, env://, file://) that cannot be resolved' },
  'AGENT.STATE_FILE': { status: 500, internal: true, meaning: 'A collector\'s state file that cannot be read or written' },
  'AGENT.LOCK_HELD': { status: 500, internal: true, meaning: 'Another process runs the collector of this mailbox (its lock file is held)' },
  'AGENT.CHAT_DB': { status: 500, internal: true, meaning: 'The chat database is missing or is not a Messages database' },
  'AGENT.COLLECTOR_BUSY': { status: 500, internal: true, meaning: 'A collector run was asked for while one is under way (the agent answers 409)' },
  'AGENT.SOURCE_BUSY': { status: 500, internal: true, meaning: 'A source run was asked for while one is under way (the agent answers 409)' },
  'AGENT.BATCH_FAILED': { status: 500, internal: true, meaning: 'A batch the chat collector must send again later' },
  'AGENT.BPLIST': { status: 500, internal: true, meaning: 'A binary plist that cannot be read (the message keeps no rich text)' },
  'AGENT.BIND': { status: 500, internal: true, meaning: 'The agent cannot listen on its address' },
  'MCP.TOOL_FAILED': { status: 500, internal: true, meaning: 'A tool call the assistant can act on (a refused argument, an answer that is not 2xx): returned as an isError result' },
  'AGENT.CONFIG': { status: 500, internal: true, meaning: 'The agent configuration (YAML and SVC_* settings) is not valid: the agent names the key and does not start' },
  'AGENT.SCHEDULE': { status: 500, internal: true, meaning: 'A schedule or duration in the agent\'s configuration that cannot be read' },
  'AGENT.DAV': { status: 500, internal: true, meaning: 'A CalDAV or CardDAV server refused or could not be reached' },
  'AGENT.URL_FETCH': { status: 502, internal: true, meaning: 'A URL the agent was asked to fetch could not be (the agent answers with the error\'s status)' },
  'AGENT.COLLECTOR_REFUSED': { status: 400, internal: true, meaning: 'A collector request the agent refuses (the agent answers with the error\'s status)' },
  'AGENT.EMAIL_INPUT': { status: 422, internal: true, meaning: 'Mail the agent cannot read (the agent answers with the error\'s status)' },

  // Control flow (never an answer).
  'CONTROL.DRY_RUN': { status: 500, internal: true, meaning: 'Rolls back the transaction of a dry run (forget, gc) after counting' },

  // Maintenance.
  'BACKUP.ABORTED': { status: 500, internal: true, meaning: 'The reader of a backup went away: the backup stops' },
  'BACKUP.CONFLICT': { status: 409, body: 'error_code', meaning: 'A backup that cannot be restored, or a backup or restore that cannot run now or here' },
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

export function errorCodeEntry(code: ErrorCode): ErrorCodeEntry {
  return ERROR_CODES[code];
}

/** Whether an answer of this code at `status` says `retryable`: the entry's word, else 5xx and 429 are. */
export function retryableOf(entry: ErrorCodeEntry, status: number): boolean {
  return entry.retryable ?? (status >= 500 || status === 429);
}

/** The Markdown table of every code, as docs/errors.md carries it between `<!-- error-codes -->` markers. */
export function errorCodesTable(): string {
  const rows = Object.entries(ERROR_CODES as Record<string, ErrorCodeEntry>).map(([code, e]) => {
    // 5xx bodies are the gateway's own (docs/errors.md says which); batch items carry the code in their envelope.
    const body = e.internal ? 'internal' : e.status === 422 ? `422 item type \`${e.type ?? code}\`` : e.body === 'envelope' ? '`detail`, `error`' : e.status >= 500 ? '—' : e.body === 'error_code' ? '`detail`, `error_code`' : '`detail`';
    // The envelope's `retryable` (and the Retry-After header), for the codes whose body carries one.
    const retry = e.body !== 'envelope' || e.internal ? '' : `${retryableOf(e, e.status) ? 'yes' : 'no'}${e.retryAfterSeconds ? `, after ${e.retryAfterSeconds} s` : ''}`;
    return `| \`${code}\` | ${e.status} | ${body} | ${retry} | ${e.meaning} |`;
  });
  return ['| code | status | body | retryable | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

const BLOCK = /(<!-- error-codes -->\n)[\s\S]*?(<!-- \/error-codes -->)/;

/** `page` with its error-code table rewritten from ERROR_CODES. */
export function renderErrorCodesBlock(page: string): string {
  return page.replace(BLOCK, (_m, open: string, close: string) => `${open}${errorCodesTable()}\n${close}`);
}
