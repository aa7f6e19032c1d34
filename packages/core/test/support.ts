import type { Sql } from '@svc/core';
import { createTestContext, type TestContext } from '@svc/core/testing';

/**
 * A test file's own database and Redis prefix, made before its tests and dropped after them;
 * read `ctx` and `sql` inside tests (they exist from `beforeAll` on).
 */
export function databaseSuite(): { readonly ctx: TestContext; readonly sql: Sql } {
  let ctx: TestContext | undefined;
  beforeAll(async () => {
    ctx = await createTestContext();
  });
  afterAll(() => ctx?.close());
  return {
    get ctx() {
      return ctx!;
    },
    get sql() {
      return ctx!.sql;
    },
  };
}
