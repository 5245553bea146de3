// The local chain the EVM payment provider is tested against: real Hardhat node, real ERC-20s,
// and the chain controls (snapshot/revert, mining) that reorg and confirmation tests rely on.
import { createPublicClient, erc20Abi, http } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { evmChainsEnv, startDevChain, type DevChain } from '../helpers/evm-chain';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('dev EVM chain (src/dev/evm-chain.ts)', () => {
  let chain: DevChain;
  let client: ReturnType<typeof createPublicClient>;
  const balanceOf = (token: 'USDT' | 'USDC', owner: `0x${string}`) =>
    client.readContract({
      address: chain.tokens[token].address,
      abi: erc20Abi,
      functionName: 'balanceOf',
      args: [owner],
    });
  const freshAddress = () => privateKeyToAccount(generatePrivateKey()).address;

  beforeAll(async () => {
    chain = await startDevChain();
    client = createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
  });
  afterAll(() => chain?.stop());

  test.each([['USDT'], ['USDC']] as const)(
    'deploys %s with 6 decimals, its symbol, and the supply held by the payer',
    async (symbol) => {
      const address = chain.tokens[symbol].address;
      expect(chain.tokens[symbol]).toEqual({ symbol, address, decimals: 6 });
      expect(await client.readContract({ address, abi: erc20Abi, functionName: 'decimals' })).toBe(6);
      expect(await client.readContract({ address, abi: erc20Abi, functionName: 'symbol' })).toBe(symbol);
      expect(await balanceOf(symbol, chain.payer.address)).toBe(1_000_000_000n * 10n ** 6n);
    },
  );

  test('the payer is Hardhat account #0 and the chain answers with its id', async () => {
    expect(chain.payer.address).toBe(privateKeyToAccount(chain.payer.privateKey).address);
    expect(chain.payer.address).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    expect(await client.getChainId()).toBe(31337);
  });

  test('pay() transfers atomic units and resolves once mined', async () => {
    const to = freshAddress();
    const hash = await chain.pay(to, 'USDT', 12_500_000n);
    const receipt = await client.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    expect(receipt.to).toBe(chain.tokens.USDT.address.toLowerCase());
    expect(await balanceOf('USDT', to)).toBe(12_500_000n);
    expect(await balanceOf('USDC', to)).toBe(0n);
  });

  test('revert to a snapshot drops a payment, and the next block at that height is a different block', async () => {
    const to = freshAddress();
    const id = await chain.snapshot();
    const before = await chain.blockNumber();
    await chain.pay(to, 'USDC', 7_000_000n);
    const paidBlock = await client.getBlock({ blockNumber: before + 1n });
    expect(await balanceOf('USDC', to)).toBe(7_000_000n);

    await chain.revert(id);
    expect(await chain.blockNumber()).toBe(before);
    expect(await balanceOf('USDC', to)).toBe(0n);
    await chain.mine();
    const replacement = await client.getBlock({ blockNumber: before + 1n });
    expect(replacement.number).toBe(paidBlock.number);
    expect(replacement.hash).not.toBe(paidBlock.hash);
    expect(replacement.transactions).toEqual([]);
  });

  test('with automine off, pay() returns once sent and the transfer lands with the next mined block', async () => {
    const to = freshAddress();
    await chain.setAutomine(false);
    try {
      const head = await chain.blockNumber();
      const hash = await chain.pay(to, 'USDT', 1_000_000n);
      expect(await chain.blockNumber()).toBe(head);
      expect(await balanceOf('USDT', to)).toBe(0n);
      await chain.mine(3);
      expect(await chain.blockNumber()).toBe(head + 3n);
      expect((await client.getTransactionReceipt({ hash })).blockNumber).toBe(head + 1n);
      expect(await balanceOf('USDT', to)).toBe(1_000_000n);
    } finally {
      await chain.setAutomine(true);
    }
  });

  test('evmChainsEnv renders the EVM_CHAINS setting for the chain', () => {
    const { USDT, USDC } = chain.tokens;
    expect(evmChainsEnv(chain, { confirmations: 3 })).toBe(
      `[{"chainId":31337,"name":"Hardhat","rpcUrls":["${chain.rpcUrl}"],"confirmations":3,` +
        `"tokens":{"USDT":{"address":"${USDT.address}","decimals":6},"USDC":{"address":"${USDC.address}","decimals":6}}}]`,
    );
    expect(JSON.parse(evmChainsEnv(chain, { rpcUrls: ['http://127.0.0.1:1', chain.rpcUrl] }))[0]).toMatchObject({
      rpcUrls: ['http://127.0.0.1:1', chain.rpcUrl],
      confirmations: 2,
    });
  });

  test('stop() ends the node process, and stopping again is a no-op', async () => {
    expect(alive(chain.pid)).toBe(true);
    await chain.stop();
    expect(alive(chain.pid)).toBe(false);
    await expect(chain.stop()).resolves.toBeUndefined();
    await expect(client.getChainId()).rejects.toThrow();
  });
});
