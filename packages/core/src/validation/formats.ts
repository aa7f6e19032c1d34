import { ValidationError } from '../errors';
import { es } from '../messages/server-messages';
import { Type, type TSchema } from '@sinclair/typebox';

/** Shared schema pieces, so every body and query agrees on the contract's limits. */
export const Uuid = (options: object = {}) => Type.String({ format: 'uuid', ...options });
export const DateTime = (options: object = {}) => Type.String({ format: 'date-time', ...options });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const Priority = Type.Integer({ minimum: 1, maximum: 5, default: 3 });

export const PageQuery = {
  page: Type.Integer({ minimum: 1, maximum: 500, default: 1 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
};

export interface PageMeta {
  page: number;
  limit: number;
  total: number;
  pages: number;
}

export function pageMeta(page: number, limit: number, total: number): PageMeta {
  return { page, limit, total, pages: Math.ceil(total / limit) };
}

/**
 * A date-time the schema's format accepts but Postgres cannot store: year 0000 (valid ISO 8601,
 * refused by Postgres as out of range). A validation error on `loc` instead of a 500.
 */
export function storableDate(value: string | null | undefined, loc: Array<string | number>): string | null {
  if (value === null || value === undefined) return null;
  if (value.startsWith('0000')) throw ValidationError.single(loc, es.queues.dateOutOfRange, 'date_range');
  return value;
}
