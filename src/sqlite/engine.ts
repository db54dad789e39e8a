/**
 * SQLite compiled to WebAssembly (@journeyapps/wa-sqlite, its synchronous build), opened on real files through
 * Node's fs by a JavaScript VFS: nothing to compile at install, and a file is read page by page as queries need
 * it (a 1 GB database is never loaded whole).
 *
 * Two pieces:
 * - SqliteConnection / SqliteStatement: a small synchronous API (prepare, run, all, get, exec) over the C API.
 * - SqliteSnapshot: read-only access to a database ANOTHER process keeps writing (Messages' chat.db). The VFS
 *   (ReadOnlyFileVfs) opens files with O_RDONLY and refuses every write, truncate and delete, so this process
 *   can never change the file. Node has no POSIX advisory locks, so we cannot take part in SQLite's locking;
 *   instead each read is checked afterwards: it counts only if the database file was not written (size, mtime,
 *   inode) and the WAL was not restarted (its 32-byte header, which holds the salts) while we read. Otherwise
 *   the read is repeated on a fresh snapshot. The WAL index lives in this connection's memory (locking_mode
 *   EXCLUSIVE is how SQLite reads WAL without shared memory); frames appended after the snapshot was taken are
 *   outside it, and the next query opens a new snapshot when the files changed, so new messages are seen at once.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import SQLiteESMFactory from '@journeyapps/wa-sqlite/dist/wa-sqlite.mjs';
import { FacadeVFS } from '@journeyapps/wa-sqlite/src/FacadeVFS.js';
import { codedError } from '../util/errors.ts';

const require = createRequire(import.meta.url);

// SQLite result codes and flags used here (sqlite3.h).
const SQLITE_OK = 0;
const SQLITE_ERROR = 1;
const SQLITE_BUSY = 5;
const SQLITE_READONLY = 8;
const SQLITE_IOERR = 10;
const SQLITE_CORRUPT = 11;
const SQLITE_NOTFOUND = 12;
const SQLITE_CANTOPEN = 14;
const SQLITE_ROW = 100;
const SQLITE_DONE = 101;
const SQLITE_IOERR_SHORT_READ = 522;
const SQLITE_OPEN_READONLY = 0x1;
const SQLITE_OPEN_READWRITE = 0x2;
const SQLITE_OPEN_CREATE = 0x4;
const SQLITE_OPEN_WAL = 0x80000;
const SQLITE_ACCESS_READWRITE = 1;
const SQLITE_INTEGER = 1;
const SQLITE_FLOAT = 2;
const SQLITE_TEXT = 3;
const SQLITE_BLOB = 4;

/** What the Emscripten module exposes that this file uses. */
interface WasmModule {
  HEAPU8: Uint8Array;
  ccall(name: string, ret: 'number' | 'string' | null, args: string[], values: unknown[]): unknown;
  getValue(ptr: number, type: string): number;
  getTempRet0(): number;
  UTF8ToString(ptr: number): string;
  vfs_register(vfs: object, makeDefault: boolean): number;
  _sqlite3_malloc(n: number): number;
  _sqlite3_free(ptr: number): void;
  _sqlite3_open_v2(zName: number, ppDb: number, flags: number, zVfs: number): number;
  _sqlite3_close_v2(db: number): number;
  _sqlite3_prepare_v2(db: number, zSql: number, n: number, ppStmt: number, pzTail: number): number;
  _sqlite3_step(stmt: number): number;
  _sqlite3_reset(stmt: number): number;
  _sqlite3_clear_bindings(stmt: number): number;
  _sqlite3_finalize(stmt: number): number;
  _sqlite3_bind_parameter_count(stmt: number): number;
  _sqlite3_bind_parameter_index(stmt: number, zName: number): number;
  _sqlite3_bind_null(stmt: number, i: number): number;
  _sqlite3_bind_int(stmt: number, i: number, v: number): number;
  _sqlite3_bind_int64(stmt: number, i: number, lo: number, hi: number): number;
  _sqlite3_bind_double(stmt: number, i: number, v: number): number;
  _sqlite3_bind_text(stmt: number, i: number, ptr: number, n: number, destructor: number): number;
  _sqlite3_bind_blob(stmt: number, i: number, ptr: number, n: number, destructor: number): number;
  _sqlite3_column_count(stmt: number): number;
  _sqlite3_column_name(stmt: number, i: number): number;
  _sqlite3_column_type(stmt: number, i: number): number;
  _sqlite3_column_int64(stmt: number, i: number): number;
  _sqlite3_column_double(stmt: number, i: number): number;
  _sqlite3_column_text(stmt: number, i: number): number;
  _sqlite3_column_blob(stmt: number, i: number): number;
  _sqlite3_column_bytes(stmt: number, i: number): number;
  _sqlite3_changes(db: number): number;
  _sqlite3_last_insert_rowid(db: number): number;
  _sqlite3_errmsg(db: number): number;
  _getSqliteFree(): number;
}

/** Loaded once per process, when this module is first imported (about 1 MB of WebAssembly). */
const wasm = (await SQLiteESMFactory({
  wasmBinary: fs.readFileSync(require.resolve('@journeyapps/wa-sqlite/dist/wa-sqlite.wasm')),
})) as WasmModule;
const FREE = wasm._getSqliteFree();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class SqliteError extends codedError('SQLITE.FAILED') {
  constructor(
    message: string,
    /** SQLite's result code (`code` is memex's, src/util/error-codes.ts). */
    readonly resultCode: number,
  ) {
    super(message);
  }
}

export type SqlValue = number | bigint | string | Uint8Array | null;
export type SqlParam = SqlValue | boolean;
/** Positional parameters, or one object of named ones (`@name`, `:name` or `$name` in the SQL). */
export type SqlParams = SqlParam[] | [Record<string, SqlParam>];
export type Row = Record<string, SqlValue>;

function cString(s: string): number {
  const bytes = encoder.encode(s);
  const ptr = wasm._sqlite3_malloc(bytes.length + 1);
  wasm.HEAPU8.set(bytes, ptr);
  wasm.HEAPU8[ptr + bytes.length] = 0;
  return ptr;
}

/** Scratch space for out-pointers (one pointer each). */
const scratch = wasm._sqlite3_malloc(16);

/**
 * Registers a VFS under its name (once per name and process). `vfs` is a FacadeVFS subclass constructed with
 * (name, module): use vfsModule as the module.
 */
export const vfsModule: unknown = wasm;
const registered = new Map<string, object>();
export function registerVfs(vfs: FacadeVFS): void {
  if (registered.has(vfs.name)) return;
  const rc = wasm.vfs_register(vfs, false);
  if (rc !== SQLITE_OK) throw new SqliteError(`cannot register VFS ${vfs.name}`, rc);
  registered.set(vfs.name, vfs);
}

export class SqliteStatement {
  private ptr: number;
  private columns: string[] | null = null;
  private bigints = false;

  constructor(
    private readonly conn: SqliteConnection,
    readonly sql: string,
  ) {
    const z = cString(sql);
    try {
      const rc = wasm._sqlite3_prepare_v2(conn.handle, z, -1, scratch, 0);
      conn.check(rc);
      this.ptr = wasm.getValue(scratch, 'i32');
      if (!this.ptr) throw new SqliteError(`nothing to prepare in: ${sql.slice(0, 80)}`, SQLITE_ERROR);
    } finally {
      wasm._sqlite3_free(z);
    }
  }

  /** Integers as BigInt (exact past 2^53) instead of numbers. */
  safeIntegers(on = true): this {
    this.bigints = on;
    return this;
  }

  run(...params: SqlParams): { changes: number; lastInsertRowid: number } {
    this.start(params);
    try {
      while (this.step()) {
        /* a statement that returns rows, run for its effect */
      }
    } finally {
      wasm._sqlite3_reset(this.ptr);
    }
    return { changes: wasm._sqlite3_changes(this.conn.handle), lastInsertRowid: this.conn.lastInsertRowid() };
  }

  all<T = Row>(...params: SqlParams): T[] {
    this.start(params);
    const rows: T[] = [];
    try {
      while (this.step()) rows.push(this.row() as T);
    } finally {
      wasm._sqlite3_reset(this.ptr);
    }
    return rows;
  }

  get<T = Row>(...params: SqlParams): T | undefined {
    this.start(params);
    try {
      return this.step() ? (this.row() as T) : undefined;
    } finally {
      wasm._sqlite3_reset(this.ptr);
    }
  }

  finalize(): void {
    if (this.ptr) wasm._sqlite3_finalize(this.ptr);
    this.ptr = 0;
  }

  private start(params: SqlParams): void {
    if (!this.ptr) throw new SqliteError('statement finalized', SQLITE_ERROR);
    wasm._sqlite3_reset(this.ptr);
    wasm._sqlite3_clear_bindings(this.ptr);
    const first = params[0];
    if (params.length === 1 && first !== null && typeof first === 'object' && !(first instanceof Uint8Array)) {
      for (const [key, value] of Object.entries(first as Record<string, SqlParam>)) {
        let index = 0;
        for (const prefix of ['@', ':', '$']) {
          const z = cString(prefix + key);
          index = wasm._sqlite3_bind_parameter_index(this.ptr, z);
          wasm._sqlite3_free(z);
          if (index) break;
        }
        if (!index) throw new SqliteError(`no parameter named ${key}`, SQLITE_ERROR);
        this.bind(index, value);
      }
      return;
    }
    const expected = wasm._sqlite3_bind_parameter_count(this.ptr);
    if (params.length !== expected) throw new SqliteError(`expected ${expected} parameters, got ${params.length}`, SQLITE_ERROR);
    (params as SqlParam[]).forEach((v, i) => this.bind(i + 1, v));
  }

  private bind(i: number, v: SqlParam): void {
    let rc: number;
    if (v === null || v === undefined) rc = wasm._sqlite3_bind_null(this.ptr, i);
    else if (typeof v === 'boolean') rc = wasm._sqlite3_bind_int(this.ptr, i, v ? 1 : 0);
    else if (typeof v === 'number') {
      if (Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) rc = wasm._sqlite3_bind_int(this.ptr, i, v);
      else if (Number.isSafeInteger(v)) rc = this.bindInt64(i, BigInt(v));
      else rc = wasm._sqlite3_bind_double(this.ptr, i, v);
    } else if (typeof v === 'bigint') rc = this.bindInt64(i, v);
    else if (typeof v === 'string') {
      const bytes = encoder.encode(v);
      const ptr = wasm._sqlite3_malloc(bytes.length + 1);
      wasm.HEAPU8.set(bytes, ptr);
      rc = wasm._sqlite3_bind_text(this.ptr, i, ptr, bytes.length, FREE);
    } else if (v instanceof Uint8Array) {
      const ptr = wasm._sqlite3_malloc(Math.max(1, v.length));
      wasm.HEAPU8.set(v, ptr);
      rc = wasm._sqlite3_bind_blob(this.ptr, i, ptr, v.length, FREE);
    } else throw new SqliteError(`cannot bind a ${typeof v}`, SQLITE_ERROR);
    this.conn.check(rc);
  }

  private bindInt64(i: number, v: bigint): number {
    const lo = Number(BigInt.asIntN(32, v));
    const hi = Number(BigInt.asIntN(32, v >> 32n));
    return wasm._sqlite3_bind_int64(this.ptr, i, lo, hi);
  }

  private step(): boolean {
    const rc = wasm._sqlite3_step(this.ptr);
    if (rc === SQLITE_ROW) return true;
    if (rc === SQLITE_DONE) return false;
    this.conn.check(rc);
    return false;
  }

  private row(): Row {
    if (!this.columns) {
      const n = wasm._sqlite3_column_count(this.ptr);
      this.columns = Array.from({ length: n }, (_, i) => wasm.UTF8ToString(wasm._sqlite3_column_name(this.ptr, i)));
    }
    const out: Row = {};
    for (let i = 0; i < this.columns.length; i++) out[this.columns[i]] = this.value(i);
    return out;
  }

  private value(i: number): SqlValue {
    switch (wasm._sqlite3_column_type(this.ptr, i)) {
      case SQLITE_INTEGER: {
        const lo = wasm._sqlite3_column_int64(this.ptr, i);
        const hi = wasm.getTempRet0();
        const big = (BigInt(hi) << 32n) | BigInt(lo >>> 0);
        return this.bigints ? big : Number(big);
      }
      case SQLITE_FLOAT:
        return wasm._sqlite3_column_double(this.ptr, i);
      case SQLITE_TEXT: {
        const p = wasm._sqlite3_column_text(this.ptr, i);
        const n = wasm._sqlite3_column_bytes(this.ptr, i);
        return decoder.decode(wasm.HEAPU8.subarray(p, p + n));
      }
      case SQLITE_BLOB: {
        const p = wasm._sqlite3_column_blob(this.ptr, i);
        const n = wasm._sqlite3_column_bytes(this.ptr, i);
        return wasm.HEAPU8.slice(p, p + n); // a copy: the heap is reused by the next step
      }
      default:
        return null;
    }
  }
}

export interface OpenOptions {
  /** Name of a VFS given to registerVfs. */
  vfs: string;
  readOnly?: boolean;
}

/** One database connection. Statements made by prepare() are finalized by close(). */
export class SqliteConnection {
  private ptr: number;
  private readonly statements = new Set<SqliteStatement>();

  constructor(
    readonly path: string,
    opts: OpenOptions,
  ) {
    const flags = opts.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    const zName = cString(path);
    const zVfs = cString(opts.vfs);
    try {
      const rc = wasm._sqlite3_open_v2(zName, scratch, flags, zVfs);
      this.ptr = wasm.getValue(scratch, 'i32');
      if (rc !== SQLITE_OK) {
        const message = this.ptr ? wasm.UTF8ToString(wasm._sqlite3_errmsg(this.ptr)) : 'cannot open';
        if (this.ptr) wasm._sqlite3_close_v2(this.ptr);
        this.ptr = 0;
        throw new SqliteError(`${message}: ${path}`, rc);
      }
    } finally {
      wasm._sqlite3_free(zName);
      wasm._sqlite3_free(zVfs);
    }
  }

  get handle(): number {
    if (!this.ptr) throw new SqliteError('database closed', SQLITE_ERROR);
    return this.ptr;
  }

  get open(): boolean {
    return this.ptr !== 0;
  }

  /** Throws the connection's error message for a failed result code. */
  check(rc: number): void {
    if (rc === SQLITE_OK) return;
    throw new SqliteError(wasm.UTF8ToString(wasm._sqlite3_errmsg(this.handle)), rc);
  }

  lastInsertRowid(): number {
    const lo = wasm._sqlite3_last_insert_rowid(this.handle);
    return Number((BigInt(wasm.getTempRet0()) << 32n) | BigInt(lo >>> 0));
  }

  prepare(sql: string): SqliteStatement {
    const st = new SqliteStatement(this, sql);
    this.statements.add(st);
    return st;
  }

  /** Runs one statement and finalizes it. */
  all<T = Row>(sql: string, ...params: SqlParams): T[] {
    const st = new SqliteStatement(this, sql);
    try {
      return st.all<T>(...params);
    } finally {
      st.finalize();
    }
  }

  get<T = Row>(sql: string, ...params: SqlParams): T | undefined {
    const st = new SqliteStatement(this, sql);
    try {
      return st.get<T>(...params);
    } finally {
      st.finalize();
    }
  }

  /** Runs every statement in `sql` (no parameters). */
  exec(sql: string): void {
    const z = cString(sql);
    try {
      this.check(wasm.ccall('sqlite3_exec', 'number', ['number', 'number', 'number', 'number', 'number'], [this.handle, z, 0, 0, 0]) as number);
    } finally {
      wasm._sqlite3_free(z);
    }
  }

  /** `PRAGMA <text>`, rows as objects (better-sqlite3's shape). */
  pragma(text: string): Row[] {
    return this.all(`PRAGMA ${text}`);
  }

  close(): void {
    if (!this.ptr) return;
    for (const st of this.statements) st.finalize();
    this.statements.clear();
    wasm._sqlite3_close_v2(this.ptr);
    this.ptr = 0;
  }
}

interface OpenFile {
  /** -1: a WAL that does not exist on disk, seen as empty (a read-only reader must not create it). */
  fd: number;
  path: string;
}

/**
 * Files through Node's fs, opened read-only; writes, truncation and deletion are refused, and no lock is taken
 * (SqliteSnapshot validates its reads instead). Temporary files are refused too: connections use temp_store=MEMORY.
 */
export class ReadOnlyFileVfs extends FacadeVFS {
  protected readonly files = new Map<number, OpenFile>();

  /** Longest path SQLite may hand us (FacadeVFS's default, 64, is too short for real paths). */
  readonly mxPathname = 1024;

  constructor(name = 'memex-readonly') {
    super(name, wasm);
  }

  // FacadeVFS hands jRead/jWrite a proxy that survives memory growth during asynchronous calls; this build is
  // synchronous, so a plain view of the heap is safe, and fs.readSync/writeSync need a real Uint8Array.
  xRead(pFile: number, pData: number, iAmt: number, iOffsetLo: number, iOffsetHi: number): number {
    return this.jRead(pFile, wasm.HEAPU8.subarray(pData, pData + iAmt), iOffsetHi * 0x100000000 + (iOffsetLo >>> 0));
  }

  xWrite(pFile: number, pData: number, iAmt: number, iOffsetLo: number, iOffsetHi: number): number {
    return this.jWrite(pFile, wasm.HEAPU8.subarray(pData, pData + iAmt), iOffsetHi * 0x100000000 + (iOffsetLo >>> 0));
  }

  protected openFd(filename: string, _flags: number): number {
    return fs.openSync(filename, 'r');
  }

  override jOpen(filename: string | null, pFile: number, flags: number, pOutFlags: DataView): number {
    if (!filename) return SQLITE_CANTOPEN;
    try {
      this.files.set(pFile, { fd: this.openFd(filename, flags), path: filename });
    } catch (err) {
      // A WAL-mode database whose app is closed has no -wal file; SQLite opens one anyway. Reading it as empty
      // gives the database file's own state, and nothing is created beside the user's file.
      if (!(flags & SQLITE_OPEN_WAL) || (err as NodeJS.ErrnoException).code !== 'ENOENT' || this.writableAccess()) return SQLITE_CANTOPEN;
      this.files.set(pFile, { fd: -1, path: filename });
    }
    pOutFlags.setInt32(0, this.outFlags(flags), true);
    return SQLITE_OK;
  }

  protected outFlags(flags: number): number {
    return (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
  }

  override jClose(pFile: number): number {
    const f = this.files.get(pFile);
    if (f) {
      this.files.delete(pFile);
      if (f.fd < 0) return SQLITE_OK;
      try {
        fs.closeSync(f.fd);
      } catch {
        return SQLITE_IOERR;
      }
    }
    return SQLITE_OK;
  }

  override jRead(pFile: number, pData: Uint8Array, iOffset: number): number {
    const f = this.files.get(pFile);
    if (!f) return SQLITE_IOERR;
    let got = 0;
    try {
      while (f.fd >= 0 && got < pData.length) {
        const n = fs.readSync(f.fd, pData, got, pData.length - got, iOffset + got);
        if (n === 0) break;
        got += n;
      }
    } catch {
      return SQLITE_IOERR;
    }
    if (got < pData.length) {
      pData.fill(0, got);
      return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
  }

  override jWrite(_pFile: number, _pData: Uint8Array, _iOffset: number): number {
    return SQLITE_READONLY;
  }

  override jTruncate(_pFile: number, _size: number): number {
    return SQLITE_READONLY;
  }

  override jDelete(_filename: string, _syncDir: number): number {
    return SQLITE_READONLY;
  }

  override jSync(): number {
    return SQLITE_OK;
  }

  override jFileSize(pFile: number, pSize64: DataView): number {
    const f = this.files.get(pFile);
    if (!f) return SQLITE_IOERR;
    try {
      pSize64.setBigInt64(0, f.fd < 0 ? 0n : BigInt(fs.fstatSync(f.fd).size), true);
    } catch {
      return SQLITE_IOERR;
    }
    return SQLITE_OK;
  }

  override jAccess(filename: string, flags: number, pResOut: DataView): number {
    let ok = 0;
    try {
      fs.accessSync(filename, fs.constants.R_OK);
      ok = flags === SQLITE_ACCESS_READWRITE ? this.writableAccess() : 1;
    } catch {
      ok = 0;
    }
    pResOut.setInt32(0, ok, true);
    return SQLITE_OK;
  }

  protected writableAccess(): number {
    return 0;
  }

  override jFileControl(): number {
    return SQLITE_NOTFOUND;
  }
}

const readOnlyVfs = new ReadOnlyFileVfs();
registerVfs(readOnlyVfs);

/** Identity of the files a snapshot was taken from; any change means "re-read". */
interface FileState {
  db: string;
  walHeader: string;
  walSize: number;
}

function fileState(path: string): FileState {
  const st = fs.statSync(path, { bigint: true });
  let walHeader = '';
  let walSize = 0;
  try {
    const fd = fs.openSync(`${path}-wal`, 'r');
    try {
      walSize = fs.fstatSync(fd).size;
      const head = Buffer.alloc(32);
      const n = fs.readSync(fd, head, 0, 32, 0);
      walHeader = head.subarray(0, n).toString('hex');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    /* no WAL: the database file alone is the state */
  }
  return { db: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}`, walHeader, walSize };
}

const MAX_ATTEMPTS = 8;

/**
 * A consistent read-only view of a database another process writes. Every read goes through read(): it runs on a
 * snapshot of the committed state, is repeated when a checkpoint or WAL restart happened under it, and a new
 * snapshot is taken first when the files changed since the last one (so new commits are visible at once).
 */
export class SqliteSnapshot {
  private conn: SqliteConnection | null = null;
  private state: FileState | null = null;

  private constructor(readonly path: string) {}

  /** Opens `path` read-only; throws SqliteError when it is missing or not a database. */
  static open(path: string): SqliteSnapshot {
    const s = new SqliteSnapshot(path);
    s.read((c) => c.get('SELECT count(*) AS n FROM sqlite_schema'));
    return s;
  }

  /** Runs `fn` on a snapshot whose files did not change while it ran. */
  read<T>(fn: (conn: SqliteConnection) => T): T {
    let lastError: unknown = null;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const now = fileState(this.path);
      if (!this.conn || !this.state || !unchanged(now, this.state)) this.reopen(now);
      const taken = this.state!;
      let result: T;
      try {
        result = fn(this.conn!);
      } catch (err) {
        // A torn read (a page written under us) shows up as corruption or an I/O error: retry it on a fresh
        // snapshot if the files moved; a genuine error is thrown as it is.
        if (stillValid(fileState(this.path), taken) || !isRetryable(err)) throw err;
        lastError = err;
        this.drop();
        continue;
      }
      if (stillValid(fileState(this.path), taken)) return result;
      this.drop();
    }
    throw new SqliteError(
      `${this.path} kept changing while it was read (${MAX_ATTEMPTS} attempts)${lastError ? `: ${(lastError as Error).message}` : ''}`,
      SQLITE_BUSY,
    );
  }

  close(): void {
    this.drop();
  }

  private reopen(state: FileState): void {
    this.drop();
    const conn = new SqliteConnection(this.path, { vfs: readOnlyVfs.name, readOnly: true });
    try {
      // EXCLUSIVE before the first read: SQLite then keeps the WAL index in this connection's memory (no -shm).
      conn.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA query_only = 1; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16384');
    } catch (err) {
      conn.close();
      throw err;
    }
    this.conn = conn;
    this.state = state;
  }

  private drop(): void {
    this.conn?.close();
    this.conn = null;
    this.state = null;
  }
}

/** Nothing was committed since `b`: the snapshot taken at `b` is the latest state. */
function unchanged(a: FileState, b: FileState): boolean {
  return a.db === b.db && a.walHeader === b.walHeader && a.walSize === b.walSize;
}

/**
 * What was read on the snapshot taken at `taken` is consistent: the database file was not written (a checkpoint
 * could have copied newer pages into it) and the WAL was not restarted or truncated. Frames appended to the WAL
 * are fine: they lie beyond the snapshot's end.
 */
function stillValid(now: FileState, taken: FileState): boolean {
  return now.db === taken.db && now.walHeader === taken.walHeader && now.walSize >= taken.walSize;
}

function isRetryable(err: unknown): boolean {
  const code = err instanceof SqliteError ? err.resultCode & 0xff : -1;
  return code === SQLITE_CORRUPT || code === SQLITE_IOERR || code === SQLITE_BUSY || code === SQLITE_ERROR;
}
