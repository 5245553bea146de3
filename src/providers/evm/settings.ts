import { z } from 'zod';

// The operator's chains, as EVM_CHAINS holds them (JSON): which tokens a payer may send where,
// through which nodes, and how deep a transfer must be before it counts. It is a secret of the
// deployment (RPC URLs carry provider keys), so no part of it is ever logged.

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'expected a 0x-prefixed 20-byte hex address')
  .transform((a) => a.toLowerCase() as `0x${string}`);

const token = z.object({
  address,
  // 6 on most chains, 18 on BNB Chain; checked against the contract's decimals() at start.
  decimals: z.number().int().min(0).max(36),
});

export const TOKEN_SYMBOLS = ['USDT', 'USDC'] as const;
export type TokenSymbol = (typeof TOKEN_SYMBOLS)[number];

const rpcUrl = z
  .string()
  .url('expected an http(s) URL')
  .refine((u) => /^https?:\/\//.test(u), 'expected an http(s) URL');

export const chainSchema = z
  .object({
    chainId: z.number().int().positive(),
    name: z.string().min(1).max(40),
    // Tried in order: the first that answers and whose head moves serves the call.
    rpcUrls: z.array(rpcUrl).min(1, 'at least one JSON-RPC URL'),
    // Blocks on top of a transfer's block before it counts (0: counted in its own block).
    confirmations: z.number().int().min(0).max(10_000),
    tokens: z
      .object({ USDT: token.optional(), USDC: token.optional() })
      .strict()
      .refine((t) => t.USDT || t.USDC, 'at least one of USDT and USDC'),
  })
  .strict();

export type ChainSettings = z.infer<typeof chainSchema>;

export const chainsSchema = z
  .array(chainSchema)
  .min(1, 'at least one chain')
  .superRefine((chains, ctx) => {
    const seen = new Set<number>();
    for (const [i, c] of chains.entries()) {
      if (seen.has(c.chainId)) ctx.addIssue({ code: 'custom', path: [i, 'chainId'], message: `chain ${c.chainId} is listed twice` });
      seen.add(c.chainId);
    }
  });

/** EVM_CHAINS parsed, or the list of what is wrong with it (never quoting its values: URLs hold keys). */
export function parseChains(raw: string): { chains: ChainSettings[] } | { errors: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { errors: ['not valid JSON (expected an array of chains, see the README)'] };
  }
  const parsed = chainsSchema.safeParse(json);
  if (parsed.success) return { chains: parsed.data };
  return { errors: parsed.error.issues.map((i) => `${i.path.length ? `[${i.path.join('.')}] ` : ''}${i.message}`) };
}
