// Types for the parts of @journeyapps/wa-sqlite that engine.ts uses (the package declares the
// asynchronous API, not FacadeVFS).
declare module '@journeyapps/wa-sqlite/src/FacadeVFS.js' {
  export class FacadeVFS {
    constructor(name: string, module: unknown);
    readonly name: string;
    jOpen(filename: string | null, pFile: number, flags: number, pOutFlags: DataView): number;
    jDelete(filename: string, syncDir: number): number;
    jAccess(filename: string, flags: number, pResOut: DataView): number;
    jClose(pFile: number): number;
    jRead(pFile: number, pData: Uint8Array, iOffset: number): number;
    jWrite(pFile: number, pData: Uint8Array, iOffset: number): number;
    jTruncate(pFile: number, size: number): number;
    jSync(pFile: number, flags: number): number;
    jFileSize(pFile: number, pSize64: DataView): number;
    jLock(pFile: number, lockType: number): number;
    jUnlock(pFile: number, lockType: number): number;
    jFileControl(pFile: number, op: number, pArg: DataView): number;
    jDeviceCharacteristics(pFile: number): number;
  }
}

declare module '@journeyapps/wa-sqlite/dist/wa-sqlite.mjs' {
  export default function SQLiteESMFactory(config?: { wasmBinary?: Uint8Array }): Promise<unknown>;
}
