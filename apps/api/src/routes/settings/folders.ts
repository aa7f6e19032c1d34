import {
  CatalogListQuery, FolderCreate, FolderResponse, FolderUpdate,
  createFolder, deactivateFolder, getFolder, listFolders, toFolderResponse, updateFolder,
} from '@svc/core';
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
    create: createFolder,
    list: listFolders,
    get: getFolder,
    update: updateFolder,
    deactivate: deactivateFolder,
    present: async (_sql, rows) => rows.map(toFolderResponse),
  });
  return router;
}
