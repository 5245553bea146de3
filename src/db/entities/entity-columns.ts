// Column shapes shared by the entity schemas of every aggregate.

/** Amounts are numeric(18,2) in Postgres and hydrate as strings; src/domain/money converts them. */
export const money = { type: 'decimal', precision: 18, scale: 2 } as const;
export const timestamp = { type: 'Date', columnType: 'timestamptz' } as const;
export const createdAt = { ...timestamp, defaultRaw: 'now()' } as const;
