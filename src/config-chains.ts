import { z } from 'zod';

// PAYMENT_PROVIDER=evm: how the chains' JSON-RPC nodes are asked, by the chain scanners
// (src/services/payments/evm-scan.ts) and the checkouts' closing rescans, and how long an address is watched.

const int = (def: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

export const chainReadVariables = {
  EVM_RPC_TIMEOUT_MS: int(8000, 100),
  // eth_getLogs is asked for at most this many blocks at a time (providers cap the range).
  EVM_LOG_RANGE_BLOCKS: int(2000, 1),
  // Each chain's scanner asks eth_getLogs for at most this many deposit addresses at once (an OR
  // array in topics[2]): N open checkouts cost ceil(N / this) calls per block range. java-tron and
  // most hosted providers take up to 1,000.
  EVM_SCAN_ADDRESSES_PER_CALL: int(500, 1, 1000),
  // Each checkout's watch counts what is confirmed when its chain's scanner wakes it (a transfer of
  // its address recorded, confirmed or dropped), and on its own this often in the payment window (at
  // least PAYMENT_SYNC_SECONDS), in case a wake-up was lost: each count is two activities per open
  // checkout, the worker's main load with thousands open.
  EVM_WATCH_FALLBACK_SECONDS: int(60, 1),
  // A node whose head has not moved for this long is lagging: the next URL is asked instead.
  EVM_HEAD_STALL_SECONDS: int(180, 1),
  // After the late-payment watch, a deposit address is still watched this long, this often: what
  // arrives then (a payment too late to deliver, a second one to a spent address) is credited to
  // the account's balance.
  EVM_ADDRESS_WATCH_SECONDS: int(604800, 0),
  EVM_ADDRESS_POLL_SECONDS: int(3600, 1),
};
