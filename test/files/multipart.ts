/** Builds multipart/form-data bodies by hand, so tests control part order, names and malformed cases. */
import crypto from 'node:crypto';

export interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  contentType?: string;
}

export function multipart(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----memex${crypto.randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    else if (p.filename !== undefined) head += 'Content-Type: application/octet-stream\r\n';
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** The usual upload: meta JSON first, then the file. */
export function fileUpload(meta: Record<string, unknown>, bytes: Buffer, filename: string, contentType?: string) {
  return multipart([
    { name: 'meta', value: JSON.stringify(meta) },
    { name: 'upload', value: bytes, filename, contentType },
  ]);
}
