import { CatalogListQuery, FolderCreate, FolderResponse, FolderUpdate } from '@svc/core/schemas';
import { createRouter, type AppRouter } from '../../http/router';
import type { RouteContext } from '../../http/route';
import { addCrudRoutes } from './crud';

/** /api/v1/settings/folders: folders that group processes (admin access token). */
export function folderSettingsRoutes(rc: RouteContext): AppRouter {
  const router = createRouter();
  addCrudRoutes(router, rc, {
    resource: 'folder',
    plural: 'folders',
    noun: 'folder',
    tag: 'settings: folders',
    schemas: { create: FolderCreate, update: FolderUpdate, list: CatalogListQuery, response: FolderResponse },
  });
  return router;
}
