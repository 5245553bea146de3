#!/usr/bin/env node
// `npx wholesale ...`: the operator command, run from the TypeScript sources through tsx.
require('tsx/cjs/api').register();
require('../src/cli.ts');
