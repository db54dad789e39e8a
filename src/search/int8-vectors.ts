/**
 * 8-bit vectors in WebAssembly memory, and their dot products with a query 16 dimensions at a time
 * (WebAssembly SIMD: sign-extend 16 int8 to int16, multiply by the query's int16 and add pairs).
 *
 * Why: the in-memory k-NN of filtered searches (vector-memory.ts) runs on the gateway thread, and
 * in JavaScript a 512-dimension int8 dot product costs ~0.5 µs: a two-month range (~8,000 chunks)
 * took 4-6 ms of the thread every answer needs. The SIMD loop does the same arithmetic in integers,
 * so the result is bit for bit what the JavaScript loop gave.
 *
 * The module is ~150 bytes and built here from named opcodes (no toolchain, no binary blob in the
 * repository); its one function is, in the text format:
 *
 *   (func (export "dots") (param $q $base $slots $n $stride $out i32) (local $i $p $d i32) (local $acc $v v128)
 *     for $i in [0, $n):
 *       $p = $base + load32($slots + 4 $i) * $stride ; $acc = 0
 *       for $d in [0, $stride) step 16:
 *         $v = load128($p + $d)
 *         $acc += dot(extend_low_s($v), load128($q + 2 $d)) + dot(extend_high_s($v), load128($q + 2 $d + 16))
 *       store32($out + 4 $i, lane0 + lane1 + lane2 + lane3 of $acc))
 *
 * Memory: a scratch area (the query, a batch of slots, their results) in the first 64 KiB page,
 * then one `stride`-byte row per vector (dimensions padded with zeros to a multiple of 16).
 */

/** Largest query the scratch area holds (int16 each). */
export const MAX_DIMS = 8_192;
/** Slots per call of the kernel. */
const BATCH = 4_096;
const Q_AT = 0;
const SLOTS_AT = Q_AT + 2 * MAX_DIMS;
const OUT_AT = SLOTS_AT + 4 * BATCH;
const DATA_AT = 65_536;
const PAGE = 65_536;

// Opcodes used below (core and the 0xFD SIMD prefix), by name.
const op = {
  block: 0x02,
  loop: 0x03,
  brIf: 0x0d,
  end: 0x0b,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  i32Load: 0x28,
  i32Store: 0x36,
  i32Const: 0x41,
  i32Eqz: 0x45,
  i32LtU: 0x49,
  i32Add: 0x6a,
  i32Mul: 0x6c,
  i32Shl: 0x74,
  void: 0x40,
  i32: 0x7f,
  v128: 0x7b,
} as const;
const simd = (code: number) => [0xfd, ...uleb(code)];
const v128Load = (offset: number) => [...simd(0x00), 0, ...uleb(offset)];
const v128Zero = [...simd(0x0c), ...new Array(16).fill(0)];
const i16x8ExtendLowI8x16S = simd(0x87);
const i16x8ExtendHighI8x16S = simd(0x88);
const i32x4DotI16x8S = simd(0xba);
const i32x4Add = simd(0xae);
const i32x4ExtractLane = (lane: number) => [...simd(0x1b), lane];

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}
/** i32.const of a small non-negative value (signed LEB128: below 64 is one byte). */
const i32Const = (n: number) => {
  if (n < 0 || n >= 8192) throw new Error('i32Const: 0 <= n < 8192');
  return n < 64 ? [op.i32Const, n] : [op.i32Const, (n & 0x7f) | 0x80, n >> 7];
};
const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body];
const vector = (items: number[][]) => [...uleb(items.length), ...items.flat()];
const name = (s: string) => [...uleb(s.length), ...Buffer.from(s, 'ascii')];

function kernelBytes(): Uint8Array {
  // Parameters 0-5, then locals.
  const [q, base, slots, n, stride, out] = [0, 1, 2, 3, 4, 5];
  const [i, p, d, acc, v] = [6, 7, 8, 9, 10];
  const get = (x: number) => [op.localGet, x];
  const set = (x: number) => [op.localSet, x];
  const qAt = [...get(q), ...get(d), ...i32Const(1), op.i32Shl, op.i32Add];
  const body = [
    ...vector([
      [3, op.i32], // $i $p $d
      [2, op.v128], // $acc $v
    ]),
    op.block, op.void,
    ...get(n), op.i32Eqz, op.brIf, 0,
    op.loop, op.void,
    ...get(base), ...get(slots), ...get(i), ...i32Const(2), op.i32Shl, op.i32Add, op.i32Load, 2, 0,
    ...get(stride), op.i32Mul, op.i32Add, ...set(p),
    ...v128Zero, ...set(acc),
    ...i32Const(0), ...set(d),
    op.loop, op.void,
    ...get(p), ...get(d), op.i32Add, ...v128Load(0), ...set(v),
    ...get(acc),
    ...get(v), ...i16x8ExtendLowI8x16S, ...qAt, ...v128Load(0), ...i32x4DotI16x8S, ...i32x4Add,
    ...get(v), ...i16x8ExtendHighI8x16S, ...qAt, ...v128Load(16), ...i32x4DotI16x8S, ...i32x4Add,
    ...set(acc),
    ...get(d), ...i32Const(16), op.i32Add, op.localTee, d, ...get(stride), op.i32LtU, op.brIf, 0,
    op.end,
    ...get(out), ...get(i), ...i32Const(2), op.i32Shl, op.i32Add,
    ...get(acc), ...i32x4ExtractLane(0),
    ...get(acc), ...i32x4ExtractLane(1), op.i32Add,
    ...get(acc), ...i32x4ExtractLane(2), op.i32Add,
    ...get(acc), ...i32x4ExtractLane(3), op.i32Add,
    op.i32Store, 2, 0,
    ...get(i), ...i32Const(1), op.i32Add, op.localTee, i, ...get(n), op.i32LtU, op.brIf, 0,
    op.end,
    op.end,
    op.end,
  ];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vector([[0x60, ...vector(new Array(6).fill([op.i32])), 0]])), // type: (i32 x6) -> ()
    ...section(2, vector([[...name('m'), ...name('memory'), 0x02, 0x00, 0x01]])), // import memory, min 1 page
    ...section(3, vector([[0]])), // one function of type 0
    ...section(7, vector([[...name('dots'), 0x00, 0]])), // export it
    ...section(10, vector([[...uleb(body.length), ...body]])),
  ]);
}

/** The part of the WebAssembly API used here (the project's lib settings declare no WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
const wasm = (
  globalThis as unknown as {
    WebAssembly: {
      Module: new (bytes: Uint8Array) => object;
      Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
      Memory: new (descriptor: { initial: number }) => WasmMemory;
    };
  }
).WebAssembly;

let compiled: object | null = null;
function kernel(): object {
  compiled ??= new wasm.Module(kernelBytes());
  return compiled;
}

/** Rows of `dims` int8 values by slot, and their dot products with an int16 query. */
export class Int8Vectors {
  /** Bytes per row: dims rounded up to a multiple of 16 (the padding stays zero). */
  readonly stride: number;
  private readonly memory: WasmMemory;
  private readonly dotsOf: (q: number, base: number, slots: number, n: number, stride: number, out: number) => void;
  private capacity: number;

  /** `maxRows`: growth never reserves room for more rows than this (the caller's memory bound). */
  constructor(
    readonly dims: number,
    private readonly maxRows = Infinity,
  ) {
    if (!Number.isInteger(dims) || dims < 1 || dims > MAX_DIMS) throw new Error(`Int8Vectors: 1 <= dims <= ${MAX_DIMS}`);
    this.stride = Math.ceil(dims / 16) * 16;
    this.memory = new wasm.Memory({ initial: 1 });
    this.capacity = 0;
    const instance = new wasm.Instance(kernel(), { m: { memory: this.memory } });
    this.dotsOf = instance.exports.dots as Int8Vectors['dotsOf'];
  }

  /** Bytes of memory these rows take. */
  get bytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** Writes row `slot` (grows the memory as needed). */
  set(slot: number, values: ArrayLike<number>): void {
    if (values.length !== this.dims) throw new Error(`Int8Vectors.set: ${values.length} values for ${this.dims} dimensions`);
    if (slot >= this.maxRows) throw new Error(`Int8Vectors.set: slot ${slot} beyond ${this.maxRows} rows`);
    this.reserve(slot + 1);
    new Int8Array(this.memory.buffer, DATA_AT + slot * this.stride, this.dims).set(values);
  }

  private reserve(rows: number): void {
    if (rows <= this.capacity) return;
    // Doubling, so n rows cost O(n) copies at most (growing may move the buffer), up to maxRows.
    const want = Math.min(this.maxRows, Math.max(64, rows, 2 * this.capacity));
    const need = DATA_AT + want * this.stride;
    this.memory.grow(Math.ceil((need - this.memory.buffer.byteLength) / PAGE));
    this.capacity = Math.floor((this.memory.buffer.byteLength - DATA_AT) / this.stride);
  }

  /**
   * Rows `from` .. `to` - 1 as stored (`stride` bytes each, padding zero), copied out: for a
   * snapshot (vector-memory.ts). Rows once set never change, so a copy in several calls is consistent.
   */
  copyRows(from: number, to: number): Uint8Array {
    if (!(from >= 0 && from <= to && to <= this.capacity)) throw new Error('Int8Vectors.copyRows: out of range');
    return new Uint8Array(this.memory.buffer, DATA_AT + from * this.stride, (to - from) * this.stride).slice();
  }

  /** Sets rows 0 .. n - 1 from `rows` (`stride` bytes each, as copyRows gives them), in one copy. */
  loadRows(rows: Uint8Array): void {
    if (rows.length % this.stride !== 0) throw new Error('Int8Vectors.loadRows: not whole rows');
    const n = rows.length / this.stride;
    if (n > this.maxRows) throw new Error(`Int8Vectors.loadRows: ${n} rows beyond ${this.maxRows}`);
    this.reserve(n);
    new Uint8Array(this.memory.buffer, DATA_AT, rows.length).set(rows);
  }

  /**
   * out[i] = Σ_d row(slots[i])[d] × query[d], in int32 (the caller keeps |query| × 127 × dims
   * within 2^31). `query` has `dims` int16 values; a slot beyond the rows is refused, one within
   * them but never set reads as zeros.
   */
  dots(query: Int16Array, slots: Int32Array, out: Int32Array): void {
    if (query.length !== this.dims) throw new Error(`Int8Vectors.dots: query of ${query.length} for ${this.dims} dimensions`);
    const buffer = this.memory.buffer;
    const q = new Int16Array(buffer, Q_AT, this.stride);
    q.fill(0);
    q.set(query);
    const slotArea = new Int32Array(buffer, SLOTS_AT, BATCH);
    const outArea = new Int32Array(buffer, OUT_AT, BATCH);
    for (let from = 0; from < slots.length; from += BATCH) {
      const n = Math.min(BATCH, slots.length - from);
      for (let i = 0; i < n; i++) {
        const s = slots[from + i];
        if (!(s >= 0 && s < this.capacity)) throw new Error(`Int8Vectors.dots: slot ${s} out of range`);
        slotArea[i] = s;
      }
      this.dotsOf(Q_AT, DATA_AT, SLOTS_AT, n, this.stride, OUT_AT);
      out.set(outArea.subarray(0, n), from);
    }
  }
}
