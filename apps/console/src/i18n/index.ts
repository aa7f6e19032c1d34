import { formattingLocale } from '../lib/format';
import { es } from './es';

/** The browser's preferred languages, most preferred first (none outside a browser: jest). */
const browserLanguages: readonly string[] =
  typeof navigator === 'undefined' ? [] : navigator.languages?.length ? navigator.languages : [navigator.language];

/**
 * The catalogue in use. A second language is a file shaped like es.ts, chosen here. Its texts are
 * shown as written; numbers and dates follow the browser's language when it is a variant of the
 * catalogue's (formattingLocale).
 */
export const t = { ...es, locale: formattingLocale(es.locale, browserLanguages) };
