import { pageMeta, type PageMeta } from '../validation/formats';

/** The page a list asks for: 1-based `page`, `limit` rows per page (defaults 1 and 20). */
export interface PageInput {
  page?: number;
  limit?: number;
}

export interface Page<T> {
  rows: T[];
  meta: PageMeta;
}

export function pageWindow(input: PageInput): { page: number; limit: number; offset: number } {
  const page = input.page ?? 1;
  const limit = input.limit ?? 20;
  return { page, limit, offset: (page - 1) * limit };
}

export function toPage<T>(rows: T[], page: number, limit: number, total: number): Page<T> {
  return { rows, meta: pageMeta(page, limit, total) };
}
