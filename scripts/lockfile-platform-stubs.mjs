#!/usr/bin/env node
// The npm registry these machines reach does not hold every platform's optional binary (for
// example @swc/core-darwin-arm64). `npm install` then leaves them out of package-lock.json, and
// `npm ci` on a clean clone refuses the lock ("Missing: … from lock file"). This adds a stub entry,
// marked optional with the os/cpu its name implies, for each missing optional dependency, so
// `npm ci` validates the lock and skips them as it would on any other platform.
// Run it after every `npm install` that changes the lock: `node scripts/lockfile-platform-stubs.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const file = resolve(process.argv[2] ?? 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;
const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony'];
const CPU = ['arm64', 'arm', 'x64', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el'];

let added = 0;
for (const [path, meta] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(meta.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (packages[key] || packages[`${path}/node_modules/${name}`]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OS.includes(p));
    const cpu = parts.find((p) => CPU.includes(p));
    if (!os || !cpu) continue; // not a platform binary: leave it to npm
    packages[key] = { version, cpu: [cpu], optional: true, os: [os] };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
process.stdout.write(`lockfile-platform-stubs: ${added} stub(s) added\n`);
