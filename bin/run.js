#!/usr/bin/env node
// Runs one of the service's entry points: `npm run api|worker|migrate`, `npx wholesale`.
// Production (NODE_ENV=production) runs the compiled code under dist/ (`npm run build`) with plain
// node, so the image needs neither tsx nor any devDependency; elsewhere the TypeScript sources run
// through tsx, so development never runs a stale build.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const ENTRIES = ['api', 'worker', 'migrate', 'cli'];

function runEntry(entry) {
  if (!ENTRIES.includes(entry)) {
    process.stderr.write(`usage: bin/run.js ${ENTRIES.join('|')}\n`);
    process.exit(2);
  }
  const root = join(__dirname, '..');
  if (process.env.NODE_ENV === 'production') {
    const compiled = join(root, 'dist', 'src', `${entry}.js`);
    if (!existsSync(compiled)) {
      process.stderr.write(
        `${JSON.stringify({ level: 60, time: Date.now(), service: 'wholesale', msg: 'cannot start', err: { message: `${compiled} is missing: production runs the compiled code; run \`npm run build\` first` } })}\n`,
      );
      process.exit(1);
    }
    require(compiled);
    return;
  }
  require('tsx/cjs/api').register();
  require(join(root, 'src', `${entry}.ts`));
}

module.exports = { runEntry };

if (require.main === module) runEntry(process.argv[2]);
