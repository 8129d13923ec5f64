/** The one timestamp format of the API: ISO 8601 UTC with milliseconds. */
export const iso = (date: Date | number) => new Date(date).toISOString()

export const HOUR_MS = 3_600_000
export const DAY_MS = 24 * HOUR_MS
