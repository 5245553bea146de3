#!/usr/bin/env node
// Run in the image's runtime stage after `npm ci --omit=dev`: the Temporal core bridge ships its
// native module for five platforms and its Rust sources; the image keeps the one module it runs
// (the same choice the bridge makes when it loads, common.js getPrebuiltTargetName) and drops the
// rest, over a hundred megabytes. Usage: node scripts/prune-runtime.mjs [node_modules]
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const modules = resolve(process.argv[2] ?? 'node_modules');
const bridge = join(modules, '@temporalio', 'core-bridge');
const keep = createRequire(import.meta.url)(join(bridge, 'common.js')).getPrebuiltTargetName();
const releases = join(bridge, 'releases');
if (!existsSync(join(releases, keep, 'index.node'))) {
  process.stderr.write(`prune-runtime: no native module for ${keep} in ${releases}; nothing removed\n`);
  process.exit(1);
}
const removed = readdirSync(releases).filter((target) => target !== keep);
for (const target of removed) rmSync(join(releases, target), { recursive: true, force: true });
rmSync(join(bridge, 'sdk-core'), { recursive: true, force: true });
process.stdout.write(
  `prune-runtime: kept the core bridge for ${keep}; removed ${removed.join(', ') || 'no other platform'} and its Rust sources\n`,
);
