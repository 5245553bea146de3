// Every error the API returns is an ApiError with the spec's stable code (spec part 7).
export const ERROR_STATUS = {
  unauthorized: 401,
  invalid_input: 400,
  invalid_cursor: 400,
  not_found: 404,
  insufficient_balance: 402,
  out_of_stock: 409,
  insufficient_stock: 409,
  stock_unavailable: 409,
  fulfillment_unavailable: 409,
  price_changed: 409,
  duplicate_order: 409,
  idempotency_conflict: 409,
  api_test_quantity: 400,
  api_test_balance_only: 400,
  test_code_only: 400,
  invalid_code: 404,
  missing_field: 400,
  invalid_account_id: 400,
  invalid_session_json: 400,
  invalid_telegram_username: 400,
  already_redeemed: 409,
  retry_conflict: 409,
  // Admin API only: a queued redemption another operator holds, or one already decided.
  claim_conflict: 409,
  // Scoped keys, beyond the spec: a known key used outside what it was made for.
  insufficient_scope: 403,
  ip_not_allowed: 403,
  key_expired: 403,
  code_expired: 410,
  webhook_not_configured: 409,
  rate_limited: 429,
  too_many_pending_topups: 429,
  payment_provider_error: 502,
  payment_provider_timeout: 504,
  session_validation_unavailable: 503,
  // Postgres or the Temporal server is briefly out of reach (a restart, a failover): retry as is.
  service_unavailable: 503,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, value);
}

/** The error body of spec 2.11: the one shape every surface answers an error with. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  requestId: string;
  retryable: boolean;
  details?: Record<string, unknown>;
}

export function errorBody(err: ApiError, requestId: string, extraDetails?: Record<string, unknown>): ErrorBody {
  const details = err.details || extraDetails ? { ...err.details, ...extraDetails } : undefined;
  return {
    error: err.code,
    message: err.message,
    requestId,
    retryable: err.retryable,
    ...(details ? { details } : {}),
  };
}

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERROR_STATUS[code];
  }

  /** 5xx and similar: the same request may be retried as is. */
  get retryable(): boolean {
    return this.status >= 500 || this.code === 'rate_limited' || this.code === 'duplicate_order';
  }
}
