import { ApiError } from '../src/domain/errors';
import { toApplicationFailure } from '../src/temporal/errors';

/** Runs an activity body, turning business errors into non-retryable failures with their code. */
export async function businessErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError) throw toApplicationFailure(err);
    throw err;
  }
}
