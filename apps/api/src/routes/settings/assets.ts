import { AssetCreate, AssetResponse, AssetUpdate, CatalogListQuery } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import type { RouteContext } from '../../http/route';
import { addCrudRoutes } from './crud';

/**
 * /api/v1/settings/assets: named values, one per environment (docs/decisions/assets.md).
 * Credentials are written here but never read back: the views carry `username` and `has_password`.
 */
export function assetSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  const values =
    '`values` holds one value per environment (dev, staging, production) of the asset\'s type: text → string, ' +
    'integer → integer, boolean → boolean, credential → `{username, password}` (encrypted at rest). A value of another type → 422.';
  addCrudRoutes(router, rc, {
    resource: 'asset',
    plural: 'assets',
    noun: 'asset',
    tag: 'settings: assets',
    schemas: { create: AssetCreate, update: AssetUpdate, list: CatalogListQuery, response: AssetResponse },
    notes: {
      create: values,
      update: `${values} On update, \`values\` merges per environment (null removes one); changing \`type\` drops the values not sent with it.`,
    },
  });
  return router;
}
