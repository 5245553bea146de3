// `npm run format` rewrites the code in Prettier's layout (.prettierrc.json); `npm run format --
// --check` changes nothing and fails, naming the files, where the code is not in it (npm test runs
// it). Prettier itself exits 0 when given both flags, so the two are kept apart here.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const prettier = createRequire(import.meta.url).resolve('prettier/bin/prettier.cjs');
const args = process.argv.slice(2);
const mode = args.includes('--check') ? [] : ['--write'];
const { status } = spawnSync(process.execPath, [prettier, '.', ...mode, ...args], { stdio: 'inherit' });
process.exit(status ?? 1);
