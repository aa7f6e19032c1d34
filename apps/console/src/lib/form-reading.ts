import { t } from '../i18n';
import { parseJsonObject } from './admin';
import { decimalOrText, numberOrText } from './catalogue';
import type { Reading } from './catalogue-page';

/**
 * Reads a form's texts into the values of its request body, noting a message for each field
 * that cannot be read so: the body is typed as the API's, and a number field holding something
 * else is said by the form rather than sent as text. Ranges and the rest stay the API's to judge.
 */
export function formReader() {
  const fields: Record<string, string> = {};
  const unread = <T>(field: string, message: string, stand: T): T => { fields[field] ??= message; return stand; };
  return {
    integer(field: string, text: string): number {
      const n = numberOrText(text);
      return typeof n === 'number' ? n : unread(field, t.catalogue.notAnInteger, 0);
    },
    decimal(field: string, text: string): number {
      const n = decimalOrText(text);
      return typeof n === 'number' ? n : unread(field, t.catalogue.notANumber, 0);
    },
    /** a JSON object typed in a text area: empty is null */
    jsonObject(field: string, text: string, messages: { badJson: string; notObject: string }): Record<string, unknown> | null {
      const parsed = parseJsonObject(text);
      return parsed.ok ? parsed.value : unread(field, parsed.reason === 'syntax' ? messages.badJson : messages.notObject, null);
    },
    /** the body, unless a field could not be read */
    body<Body>(body: Body): Reading<Body> {
      return Object.keys(fields).length > 0 ? { errors: { fields, general: null } } : { body };
    },
  };
}
