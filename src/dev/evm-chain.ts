// A real EVM chain on loopback for the tests and the `npm start` demo of PAYMENT_PROVIDER=evm:
// Hardhat 2's node as a child process, with USDT and USDC stand-ins (TestStablecoin, 6 decimals)
// deployed and held by Hardhat's well-known account #0, which plays the payer.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  erc20Abi,
  getAddress,
  http,
  type Abi,
  type Hex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import artifact from './evm/TestStablecoin.json';
import { freeLowPort } from './ports';

export type DevChainSymbol = 'USDT' | 'USDC';

export interface DevChainToken {
  symbol: DevChainSymbol;
  address: `0x${string}`;
  decimals: number;
}

export interface DevChain {
  /** http://127.0.0.1:<port> */
  rpcUrl: string;
  /** 31337 unless startDevChain was given another. */
  chainId: number;
  /** The node process, so fault tests can SIGSTOP/SIGCONT it. */
  pid: number;
  tokens: { USDT: DevChainToken; USDC: DevChainToken };
  /** Hardhat's default account #0, which holds the whole supply of both tokens. */
  payer: { address: `0x${string}`; privateKey: `0x${string}` };
  /**
   * Sends `units` (atomic) of the token from the payer to `to`; resolves with the tx hash once mined
   * when automine is on, once accepted into the mempool when it is off. Rejects if the transfer reverts.
   */
  pay(to: `0x${string}`, token: DevChainSymbol, units: bigint): Promise<`0x${string}`>;
  /** hardhat_mine */
  mine(blocks?: number): Promise<void>;
  blockNumber(): Promise<bigint>;
  /** evm_snapshot */
  snapshot(): Promise<string>;
  /** evm_revert */
  revert(id: string): Promise<void>;
  /** evm_setAutomine */
  setAutomine(on: boolean): Promise<void>;
  /** evm_setIntervalMining (0 = off) */
  setIntervalMining(ms: number): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface DevChainOptions {
  /** Default: a free loopback port (src/dev/ports.ts). */
  port?: number;
  /** Default 31337, Hardhat's own. */
  chainId?: number;
  /** Where the node listens (default 127.0.0.1). */
  host?: string;
  /** Also mine a block every this many ms, on top of automine (which puts each transaction in its own block). */
  intervalMiningMs?: number;
  /** Each line the node prints (it logs every RPC call and transaction). */
  log?: (line: string) => void;
}

/** Hardhat's default account #0: public knowledge, funded only on dev chains. */
const PAYER_KEY: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const DEFAULT_CHAIN_ID = 31337;
const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;
const INITIAL_SUPPLY_TOKENS = 1_000_000_000n;
const TOKENS: { symbol: DevChainSymbol; name: string; decimals: number }[] = [
  { symbol: 'USDT', name: 'Tether USD', decimals: 6 },
  { symbol: 'USDC', name: 'USD Coin', decimals: 6 },
];
// Loopback answers in milliseconds; viem's default of 4 s per poll would dominate every receipt wait.
const POLLING_MS = 50;

/** Node processes still running, killed when this process exits without having stopped them. */
const running = new Map<ChildProcess, string>();
let exitHookInstalled = false;

function killOnExit(child: ChildProcess, tempDir: string) {
  running.set(child, tempDir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const [proc, dir] of running) {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

/**
 * The node's config. Every path points into `dir`, so the node writes nothing into the repo.
 * The stdin lifeline covers what the parent's 'exit' listener cannot: a parent killed with SIGKILL
 * (a jest worker torn down, an OOM kill) closes its end of the pipe, and the node follows it,
 * removing `dir` on its way out.
 */
function hardhatConfig(dir: string, chainId: number, intervalMiningMs: number | undefined): string {
  const config = {
    paths: { root: dir, sources: join(dir, 'contracts'), cache: join(dir, 'cache'), artifacts: join(dir, 'artifacts') },
    networks: {
      hardhat: { chainId, mining: { auto: true, ...(intervalMiningMs ? { interval: intervalMiningMs } : {}) } },
    },
  };
  return [
    "process.stdin.on('end', () => {",
    "  require('node:fs').rmSync(__dirname, { recursive: true, force: true });",
    '  process.exit(0);',
    '}).resume();',
    `module.exports = ${JSON.stringify(config, null, 2)};`,
    '',
  ].join('\n');
}

/** Splits a stream into lines for `log`, keeping the last few for a startup error. */
function lineTail(onLine: ((line: string) => void) | undefined, keep = 40) {
  const lines: string[] = [];
  let partial = '';
  return {
    push(chunk: Buffer | string) {
      const parts = (partial + String(chunk)).split('\n');
      partial = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        if (lines.length > keep) lines.shift();
        onLine?.(line);
      }
    },
    text: () => [...lines, partial].join('\n').trim(),
  };
}

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

function terminate(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return Promise.resolve();
  return new Promise((resolveExit) => {
    const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    // 'close': the process has exited and its output pipes are closed, so nothing of it is left.
    child.once('close', () => {
      clearTimeout(force);
      resolveExit();
    });
    child.kill('SIGTERM');
    // A node a fault test left SIGSTOPped would only see the SIGTERM once continued.
    child.kill('SIGCONT');
  });
}

/**
 * Starts Hardhat's node on loopback, waits until it answers eth_chainId, and deploys USDT and USDC
 * (1,000,000,000 tokens each, all held by the payer). The node runs until stop() or this process exits.
 */
export async function startDevChain(opts: DevChainOptions = {}): Promise<DevChain> {
  const chainId = opts.chainId ?? DEFAULT_CHAIN_ID;
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? (await freeLowPort());
  const urlHost = host === '0.0.0.0' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const rpcUrl = `http://${urlHost}:${port}`;

  const tempDir = mkdtempSync(join(tmpdir(), 'dev-evm-chain-'));
  const configFile = join(tempDir, 'hardhat.config.cjs');
  writeFileSync(configFile, hardhatConfig(tempDir, chainId, opts.intervalMiningMs));

  // Hardhat refuses to run unless it resolves itself from the working directory: run it from the
  // project that installed it.
  const hardhatPackage = require.resolve('hardhat/package.json');
  const child = spawn(
    process.execPath,
    [
      require.resolve('hardhat/internal/cli/cli.js'),
      '--config',
      configFile,
      'node',
      '--hostname',
      host,
      '--port',
      String(port),
    ],
    {
      cwd: join(dirname(hardhatPackage), '..', '..'),
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true',
        // Hardhat only sends analytics with a consent stored in its global config dir; an empty one
        // of our own means none is found, and its analytics id and caches land in tempDir too.
        XDG_CONFIG_HOME: join(tempDir, 'xdg-config'),
        XDG_DATA_HOME: join(tempDir, 'xdg-data'),
        XDG_CACHE_HOME: join(tempDir, 'xdg-cache'),
      },
    },
  );
  killOnExit(child, tempDir);
  const output = lineTail(opts.log);
  child.stdout?.on('data', output.push);
  child.stderr?.on('data', output.push);
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= terminate(child).then(() => {
      running.delete(child);
      rmSync(tempDir, { recursive: true, force: true });
    }));

  try {
    const chain = defineChain({
      id: chainId,
      name: 'Hardhat',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [rpcUrl] } },
    });
    const transport = http(rpcUrl);
    const publicClient = createPublicClient({ chain, transport, pollingInterval: POLLING_MS });
    const testClient = createTestClient({ mode: 'hardhat', chain, transport, pollingInterval: POLLING_MS });
    const account = privateKeyToAccount(PAYER_KEY);
    const wallet = createWalletClient({ account, chain, transport, pollingInterval: POLLING_MS });

    await waitUntilAnswering(rpcUrl, chainId, child, () => spawnError, output.text);

    const deployed = {} as Record<DevChainSymbol, DevChainToken>;
    for (const token of TOKENS) {
      const hash = await wallet.deployContract({
        abi: artifact.abi as Abi,
        bytecode: artifact.bytecode as Hex,
        args: [token.name, token.symbol, token.decimals, INITIAL_SUPPLY_TOKENS * 10n ** BigInt(token.decimals)],
      });
      const receipt = await publicClient.waitForTransactionReceipt({ hash });
      if (receipt.status !== 'success' || !receipt.contractAddress)
        throw new Error(`deploying ${token.symbol} failed (tx ${hash})`);
      deployed[token.symbol] = {
        symbol: token.symbol,
        address: getAddress(receipt.contractAddress),
        decimals: token.decimals,
      };
    }

    // One payment at a time: each takes the payer's next nonce from the node ('pending' counts
    // what automine-off left in the mempool), which stays right across evm_revert, unlike a
    // client-side nonce counter.
    let payments: Promise<unknown> = Promise.resolve();
    const pay = (to: `0x${string}`, token: DevChainSymbol, units: bigint): Promise<`0x${string}`> => {
      const sent = payments
        .catch(() => undefined)
        .then(async () => {
          const hash = await wallet.writeContract({
            address: deployed[token].address,
            abi: erc20Abi,
            functionName: 'transfer',
            args: [to, units],
          });
          if (await testClient.getAutomine()) {
            const receipt = await publicClient.waitForTransactionReceipt({ hash });
            if (receipt.status !== 'success')
              throw new Error(`${token} transfer of ${units} units to ${to} reverted (tx ${hash})`);
          }
          return hash;
        });
      payments = sent;
      return sent;
    };

    return {
      rpcUrl,
      chainId,
      pid: child.pid!,
      tokens: { USDT: deployed.USDT, USDC: deployed.USDC },
      payer: { address: account.address, privateKey: PAYER_KEY },
      pay,
      mine: (blocks = 1) => testClient.mine({ blocks }),
      // viem caches the block number for a polling interval; a test that just mined wants the new one.
      blockNumber: () => publicClient.getBlockNumber({ cacheTime: 0 }),
      snapshot: () => testClient.snapshot(),
      revert: (id) => testClient.revert({ id: id as Hex }),
      setAutomine: (on) => testClient.setAutomine(on),
      setIntervalMining: (ms) => testClient.setIntervalMining({ interval: ms }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Polls eth_chainId until the node answers with ours; fails with the node's last lines if it exits or never does. */
async function waitUntilAnswering(
  rpcUrl: string,
  chainId: number,
  child: ChildProcess,
  spawnError: () => Error | undefined,
  lastOutput: () => string,
): Promise<void> {
  const probe = createPublicClient({ transport: http(rpcUrl, { retryCount: 0, timeout: 1_000 }) });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  for (;;) {
    const failure = spawnError();
    if (failure) throw new Error(`hardhat node did not start: ${failure.message}`);
    if (hasExited(child))
      throw new Error(
        `hardhat node exited (${child.exitCode ?? child.signalCode}) before answering at ${rpcUrl}:\n${lastOutput()}`,
      );
    if (Date.now() > deadline) {
      throw new Error(
        `hardhat node did not answer eth_chainId at ${rpcUrl} within ${READY_TIMEOUT_MS} ms (${String(lastError)}):\n${lastOutput()}`,
      );
    }
    try {
      const answered = await probe.getChainId();
      if (answered === chainId) return;
      lastError = `chain id ${answered}, expected ${chainId}: another node holds the port`;
    } catch (err) {
      lastError = (err as Error).message.split('\n')[0];
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Where under STATE_DIR `npm start` records the dev chain it runs. */
export const DEV_CHAIN_FILE = 'dev-chain.json';

/** What `npm start` records of the dev chain it runs, for `npx wholesale dev-chain pay`. */
export interface DevChainFile {
  rpcUrl: string;
  chainId: number;
  tokens: { USDT: DevChainToken; USDC: DevChainToken };
}

/**
 * A token transfer from the dev payer on a dev chain another process runs (the one `npm start`
 * started): what a payer's wallet does on the checkout page. Resolves with the hash once mined.
 */
export async function sendDevPayment(
  chainFile: DevChainFile,
  token: DevChainSymbol,
  to: `0x${string}`,
  units: bigint,
): Promise<`0x${string}`> {
  const chain = defineChain({
    id: chainFile.chainId,
    name: 'Hardhat',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [chainFile.rpcUrl] } },
  });
  const transport = http(chainFile.rpcUrl);
  const wallet = createWalletClient({
    account: privateKeyToAccount(PAYER_KEY),
    chain,
    transport,
    pollingInterval: POLLING_MS,
  });
  const hash = await wallet.writeContract({
    address: chainFile.tokens[token].address,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [to, units],
  });
  const receipt = await createPublicClient({ chain, transport, pollingInterval: POLLING_MS }).waitForTransactionReceipt(
    { hash },
  );
  if (receipt.status !== 'success') throw new Error(`the ${token} transfer reverted (tx ${hash})`);
  return hash;
}
