// The local object store's writer of small objects (src/files/small-writes.ts): a worker thread that stores a batch
// of in-memory bodies. On the gateway's main thread each object cost a dozen asynchronous file operations, and each
// of them waited for an event loop that PGlite keeps busy for hundreds of milliseconds at a time during an import:
// 100 originals took a second. This thread's event loop is its own. The batch goes in phases, each with all of its
// calls in flight at once, because concurrent fsyncs share the filesystem's journal commits where calls one after
// the other wait for one commit each (100 small files on ext4: about 0.1 s against 0.5-1.2 s in a row):
// write and fsync every new body, link them under their names, then fsync every directory touched.
//
// The same durability as a single put: each object's bytes are fsynced before the hard link makes it visible under
// its name, the directory entries are fsynced before the answer, and an object already stored is not written again
// (its mtime is renewed, as garbage collection expects of an object in use again).
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';

const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV']);

async function isFile(p) {
  try {
    return (await fs.stat(p)).isFile();
  } catch {
    return false;
  }
}

/** Publishes temp at final unless something is there: link(2) never replaces; rename where links are not supported. */
async function publishNoClobber(temp, final) {
  try {
    await fs.link(temp, final);
    return true;
  } catch (e) {
    if (e.code === 'EEXIST') return false;
    if (!LINK_UNSUPPORTED.has(e.code)) throw e;
  }
  if (await isFile(final)) return false;
  await fs.rename(temp, final);
  return true;
}

async function fsyncPath(p) {
  const fh = await fs.open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeTemp(temp, body) {
  const fh = await fs.open(temp, 'wx', 0o600);
  try {
    await fh.writeFile(body);
    await fh.sync(); // the bytes are on disk before a name makes them visible
    await fh.chmod(0o400); // objects are immutable, and the owner's alone
  } finally {
    await fh.close();
  }
}

async function storeBatch(root, tmpDir, bodies) {
  const items = bodies.map((body) => {
    const sha256 = createHash('sha256').update(body).digest('hex');
    const dir = path.join(root, 'sha256', sha256.slice(0, 2), sha256.slice(2, 4));
    return { body, sha256, dir, final: path.join(dir, sha256), temp: null, existed: true };
  });
  const now = new Date();
  // The same bytes twice in a batch are written once.
  const firstOf = new Map();
  for (const it of items) if (!firstOf.has(it.sha256)) firstOf.set(it.sha256, it);
  const unique = [...firstOf.values()];
  await Promise.all(
    unique.map(async (it) => {
      if (await isFile(it.final)) return fs.utimes(it.final, now, now).catch(() => {}); // a hint for gc only
      it.temp = path.join(tmpDir, `${process.pid}-${Date.now()}-${randomBytes(6).toString('hex')}.part`);
    }),
  );
  const fresh = unique.filter((it) => it.temp);
  const touched = new Set();
  try {
    await Promise.all(fresh.map((it) => writeTemp(it.temp, it.body)));
    await Promise.all(
      fresh.map(async (it) => {
        await fs.mkdir(it.dir, { recursive: true, mode: 0o700 });
        if (await publishNoClobber(it.temp, it.final)) {
          it.existed = false;
          touched.add(it.dir);
        }
      }),
    );
  } finally {
    await Promise.all(fresh.map((it) => fs.rm(it.temp, { force: true }).catch(() => {})));
    // Best effort, as for a single put: some filesystems cannot fsync a directory.
    await Promise.all([...touched].map((dir) => fsyncPath(dir).catch(() => {})));
  }
  return items.map((it) => {
    const first = firstOf.get(it.sha256);
    return { sha256: it.sha256, sizeBytes: it.body.length, existed: it === first ? first.existed : true };
  });
}

parentPort.on('message', async ({ id, root, tmpDir, bodies }) => {
  try {
    const results = await storeBatch(root, tmpDir, bodies.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
    parentPort.postMessage({ id, results });
  } catch (e) {
    parentPort.postMessage({ id, error: { message: e.message, code: e.code } });
  }
});
