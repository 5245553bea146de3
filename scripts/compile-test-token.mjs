// Compiles src/dev/evm/TestStablecoin.sol into the checked-in artifact next to it, so tests and
// `npm start` deploy the dev chain's tokens without a compiler. Run again after changing the source
// or bumping solc or @openzeppelin/contracts: `node scripts/compile-test-token.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const solc = require('solc');

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CONTRACT = 'TestStablecoin';
const sourcePath = join(root, 'src/dev/evm/TestStablecoin.sol');
const artifactPath = join(root, 'src/dev/evm/TestStablecoin.json');
// The repo-relative name goes into the metadata hash, so the bytecode is the same on every machine.
const sourceFile = relative(root, sourcePath).split('\\').join('/');

const input = {
  language: 'Solidity',
  sources: { [sourceFile]: { content: readFileSync(sourcePath, 'utf8') } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    // Pinned rather than solc's newest default, so the token also deploys on dev nodes that lag
    // behind mainnet's hardforks.
    evmVersion: 'paris',
    outputSelection: { [sourceFile]: { [CONTRACT]: ['abi', 'evm.bytecode.object'] } },
  },
};

// `@openzeppelin/...` imports come from node_modules, at the version package.json pins.
function findImports(path) {
  try {
    return { contents: readFileSync(require.resolve(path), 'utf8') };
  } catch (err) {
    return { error: `cannot resolve ${path}: ${err.message}` };
  }
}

const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
for (const e of output.errors ?? []) console.error(e.formattedMessage);
if (errors.length) process.exit(1);

const compiled = output.contracts[sourceFile][CONTRACT];
const artifact = {
  contractName: CONTRACT,
  sourceFile,
  solcVersion: solc.version(),
  openzeppelinVersion: require('@openzeppelin/contracts/package.json').version,
  abi: compiled.abi,
  bytecode: `0x${compiled.evm.bytecode.object}`,
};
writeFileSync(artifactPath, `${JSON.stringify(artifact, null, 2)}\n`);
console.log(
  `wrote ${relative(root, artifactPath)} (solc ${artifact.solcVersion}, @openzeppelin/contracts ${artifact.openzeppelinVersion})`,
);
