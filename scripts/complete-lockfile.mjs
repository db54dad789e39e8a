#!/usr/bin/env node
// This workplace's npm registry lacks some optional, platform-specific binaries (e.g. rollup's
// android/darwin/win32/musl builds). `npm install` then leaves them out of package-lock.json and
// npm 11's `npm ci` rejects such a lock as out of sync — on every fresh machine. This script adds
// the missing optional entries back with their os/cpu/libc fields, so `npm ci` accepts the lock and
// skips them on platforms they are not for (they are never downloaded here). Run it after any
// `npm install` that changes package-lock.json; `npm ci` then works as the README says.
import fs from 'node:fs';

const LOCK = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(fs.readFileSync(LOCK, 'utf8'));
const pkgs = lock.packages;

// Platform of a binary package from its name, e.g. @rollup/rollup-linux-arm64-musl.
function platformOf(name) {
  const n = name.split('/').pop();
  const os = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'openharmony', 'win32', 'sunos', 'netbsd', 'aix'].find((o) =>
    n.includes(`-${o}-`),
  );
  const cpu = ['arm64', 'arm', 'x64', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'mips64el', 'wasm32'].find(
    (c) => n.includes(`-${c}`),
  );
  const libc = n.includes('musl') ? 'musl' : os === 'linux' && n.includes('gnu') ? 'glibc' : undefined;
  return { os, cpu, libc };
}

let added = 0;
for (const [path, meta] of Object.entries(pkgs)) {
  for (const [dep, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${dep}`;
    if (pkgs[`node_modules/${dep}`] || pkgs[nested]) continue;
    const { os, cpu, libc } = platformOf(dep);
    if (!os || !cpu) {
      console.warn(`complete-lockfile: cannot tell the platform of ${dep}; left out`);
      continue;
    }
    pkgs[`node_modules/${dep}`] = {
      version,
      ...(meta.dev ? { dev: true } : {}),
      optional: true,
      os: [os],
      cpu: [cpu],
      ...(libc ? { libc: [libc] } : {}),
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(pkgs).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)));
fs.writeFileSync(LOCK, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} optional platform entr${added === 1 ? 'y' : 'ies'} added`);
