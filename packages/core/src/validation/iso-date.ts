/**
 * Datetimes leave the system as ISO 8601 strings (one rule for every response): a Date or a
 * string Date accepts, and null (or undefined) as null.
 */
export function iso(value: Date | string): string;
export function iso(value: Date | string | null | undefined): string | null;
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
