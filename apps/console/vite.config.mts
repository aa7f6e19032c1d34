import { defaultClientConditions, defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// Served by the API under /console (apps/api/src/console/serve.ts); assets get content hashes in
// their names so the API can cache them for a year.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  // `svc-source`: the workspace modules the console shares (@svc/core/queue-items/statuses, the
  // typed client @svc/client) are bundled from their TypeScript source; their dist is CommonJS for Node
  resolve: { conditions: ['svc-source', ...defaultClientConditions] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    // `npx vite` in apps/console for working on the pages, against an API on :3000
    proxy: { '/api': 'http://127.0.0.1:3000' },
  },
});
