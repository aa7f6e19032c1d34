// The compiled core (CommonJS) as seen from the bench's ES modules.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
/** @type {typeof import('../../packages/core/dist/index') & typeof import('../../packages/core/dist/schemas') & typeof import('../../packages/core/dist/internals')} */
export const core = { ...require('@svc/core'), ...require('@svc/core/schemas'), ...require('@svc/core/internals') };
