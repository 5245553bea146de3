import { z } from 'zod';
import { tronAddressToHex } from './tron';

// The operator's chains, as EVM_CHAINS holds them (JSON): which tokens a payer may send where,
// through which nodes, and how deep a transfer must be before it counts. It is a secret of the
// deployment (RPC URLs and API keys carry provider keys), so no part of it is ever logged: a
// problem with a URL is named by its place in EVM_CHAINS, never by its text.
//
// A chain's `kind` is `evm` (the default) or `tron`: java-tron nodes and TronGrid serve the same
// JSON-RPC reads, so a TRON chain is read by the same code; its kind changes only how deposit
// addresses derive and show (TRON_XPUB, T…), how its token contracts are written (T…, turned into
// the hex its log filters take) and that it counts transfers by finality unless told otherwise.

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

const token = z.object({
  // 0x… on an EVM chain, T… on a TRON chain (checked, with its checksum, against the chain's kind).
  address: z.string(),
  // 6 on most chains, 18 on BNB Chain; checked against the contract's decimals() at start.
  decimals: z.number().int().min(0).max(36),
});

export const TOKEN_SYMBOLS = ['USDT', 'USDC'] as const;
export type TokenSymbol = (typeof TOKEN_SYMBOLS)[number];

const rpcUrl = z
  .string()
  .url('expected an http(s) or ws(s) URL')
  .refine((u) => /^(https?|wss?):\/\//.test(u), 'expected an http(s) or ws(s) URL');

export const CHAIN_KINDS = ['evm', 'tron'] as const;
export type ChainKind = (typeof CHAIN_KINDS)[number];

export const chainSchema = z
  .object({
    kind: z.enum(CHAIN_KINDS).default('evm'),
    chainId: z.number().int().positive(),
    name: z.string().min(1).max(40),
    // Tried in order: the first that answers, is on this chain and whose head moves serves the call.
    rpcUrls: z.array(rpcUrl).min(1, 'at least one JSON-RPC URL'),
    // TRON: TronGrid's API key, sent as its TRON-PRO-API-KEY header (without one it rate-limits hard).
    apiKey: z.string().min(1).max(200).optional(),
    // Blocks on top of a transfer's block before it counts (0: counted in its own block)...
    confirmations: z.number().int().min(0).max(10_000).optional(),
    // ...or the node's `finalized` block: a transfer counts once its block is at or below it.
    finality: z.literal('finalized').optional(),
    // A node of another provider that must show the same receipt and block before a transfer counts.
    verifyWith: rpcUrl.optional(),
    tokens: z
      .object({ USDT: token.optional(), USDC: token.optional() })
      .strict()
      .refine((t) => t.USDT || t.USDC, 'at least one of USDT and USDC'),
  })
  .strict()
  .superRefine((c, ctx) => {
    for (const symbol of TOKEN_SYMBOLS) {
      const address = c.tokens[symbol]?.address;
      if (address === undefined) continue;
      const path = ['tokens', symbol, 'address'];
      if (c.kind === 'evm' && !HEX_ADDRESS.test(address))
        ctx.addIssue({ code: 'custom', path, message: 'expected a 0x-prefixed 20-byte hex address' });
      if (c.kind === 'tron') {
        try {
          tronAddressToHex(address);
        } catch (err) {
          ctx.addIssue({
            code: 'custom',
            path,
            message: `expected the contract's T… address on a TRON chain: ${(err as Error).message}`,
          });
        }
      }
    }
    if (c.apiKey && c.kind !== 'tron')
      ctx.addIssue({
        code: 'custom',
        path: ['apiKey'],
        message:
          'only for "kind": "tron" (TronGrid\'s TRON-PRO-API-KEY header); an EVM provider takes its key in the URL',
      });
    // A TRON chain counts by finality (its solidified block, about 19 blocks deep) unless told a depth.
    if (c.kind === 'evm' && c.confirmations === undefined && !c.finality)
      ctx.addIssue({ code: 'custom', path: ['confirmations'], message: 'required (or "finality": "finalized")' });
    if (c.confirmations !== undefined && c.finality)
      ctx.addIssue({
        code: 'custom',
        path: ['finality'],
        message: 'either confirmations or "finality": "finalized", not both',
      });
    if (c.verifyWith && c.rpcUrls.includes(c.verifyWith))
      ctx.addIssue({
        code: 'custom',
        path: ['verifyWith'],
        message: "must be another node than the chain's rpcUrls (another provider's)",
      });
  })
  .transform(({ tokens, finality, ...c }): ChainSettings => {
    const out: ChainSettings = { ...c, tokens: {} };
    const byFinality = finality ?? (c.kind === 'tron' && c.confirmations === undefined ? 'finalized' : undefined);
    if (byFinality) out.finality = byFinality;
    for (const symbol of TOKEN_SYMBOLS) {
      const t = tokens[symbol];
      if (t) out.tokens[symbol] = { decimals: t.decimals, address: contractHex(c.kind, t.address) };
    }
    return out;
  });

/** A token contract as the chain's log filters take it: 20-byte hex, lowercase. */
function contractHex(kind: ChainKind, address: string): `0x${string}` {
  // Only reached once the checks above passed; a value they refused is never used.
  if (kind === 'tron' && !HEX_ADDRESS.test(address)) {
    try {
      return tronAddressToHex(address);
    } catch {
      return '0x';
    }
  }
  return address.toLowerCase() as `0x${string}`;
}

/** One chain of EVM_CHAINS, parsed: token contracts in hex whatever the kind; no kind is an EVM chain. */
export interface ChainSettings {
  kind?: ChainKind;
  chainId: number;
  name: string;
  rpcUrls: string[];
  apiKey?: string;
  confirmations?: number;
  finality?: 'finalized';
  verifyWith?: string;
  tokens: Partial<Record<TokenSymbol, { address: `0x${string}`; decimals: number }>>;
}

export const chainsSchema = z
  .array(chainSchema)
  .min(1, 'at least one chain')
  .superRefine((chains, ctx) => {
    const seen = new Set<number>();
    for (const [i, c] of chains.entries()) {
      if (seen.has(c.chainId))
        ctx.addIssue({ code: 'custom', path: [i, 'chainId'], message: `chain ${c.chainId} is listed twice` });
      seen.add(c.chainId);
    }
  });

/** Where a setting sits in EVM_CHAINS, as an operator would write it: EVM_CHAINS[0].rpcUrls[1]. */
export function settingName(path: readonly PropertyKey[]): string {
  return `EVM_CHAINS${path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}`;
}

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * Production reads the chain only over TLS, or in plain text from a node on this host, and never
 * counts a transfer in its own block (a block the next one can replace).
 */
function productionProblems(chains: ChainSettings[]): string[] {
  const problems: string[] = [];
  for (const [i, c] of chains.entries()) {
    const urls: [PropertyKey[], string][] = [
      ...c.rpcUrls.map((u, j): [PropertyKey[], string] => [[i, 'rpcUrls', j], u]),
      ...(c.verifyWith ? [[[i, 'verifyWith'], c.verifyWith] as [PropertyKey[], string]] : []),
    ];
    for (const [path, url] of urls) {
      const { protocol, hostname } = new URL(url);
      const tls = protocol === 'https:' || protocol === 'wss:';
      if (!tls && !LOOPBACK_HOSTS.test(hostname)) {
        problems.push(
          `${settingName(path)}: must be https:// or wss:// in production (plain http:// or ws:// only to a node on this host, at a loopback address)`,
        );
      }
    }
    if (c.confirmations === 0)
      problems.push(
        `${settingName([i, 'confirmations'])}: must be at least 1 in production (or "finality": "finalized" instead)`,
      );
  }
  return problems;
}

/**
 * EVM_CHAINS parsed, or what is wrong with it, each line starting with the setting it is about
 * (never quoting its values: URLs hold keys).
 */
export function parseChains(
  raw: string,
  opts: { production?: boolean } = {},
): { chains: ChainSettings[] } | { errors: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { errors: ['EVM_CHAINS: not valid JSON (expected an array of chains, see the README)'] };
  }
  const parsed = chainsSchema.safeParse(json);
  if (!parsed.success) return { errors: parsed.error.issues.map((i) => `${settingName(i.path)}: ${i.message}`) };
  const problems = opts.production ? productionProblems(parsed.data) : [];
  return problems.length > 0 ? { errors: problems } : { chains: parsed.data };
}
