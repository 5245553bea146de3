/** Where the reseller API is mounted: every path of the OpenAPI document starts here. */
export const API_PREFIX = '/wholesale/v1';
