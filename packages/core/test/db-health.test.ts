import { createSql } from '@svc/core';
import { pingDatabase } from '@svc/core/internals';
import { databaseSuite } from '@svc/testing';

/** The readiness probe's one statement (the API's /ready). */
const db = databaseSuite();

describe('pingDatabase', () => {
  it('resolves while Postgres answers', async () => {
    await expect(pingDatabase(db.sql)).resolves.toBeUndefined();
  });

  it('rejects with the connection error when nothing listens', async () => {
    // port 1 on loopback: refused at once, no server involved
    const nowhere = createSql('postgres://postgres@127.0.0.1:1/none', { max: 1 });
    try {
      await expect(pingDatabase(nowhere)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      await nowhere.end({ timeout: 1 });
    }
  });
});
