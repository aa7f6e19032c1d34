import { es } from './es';

/** The catalogue in use. A second language is a file shaped like es.ts, chosen here. */
export const t = es;
