import { dictionary } from '@zxcvbn-ts/language-common';
import { MIN_PASSWORD_LENGTH } from '../users/schemas';

/**
 * Common passwords: the ~49,000 of zxcvbn-ts's common list (@zxcvbn-ts/language-common, drawn
 * from leaked-password frequency lists), the ones the first guesses of an attack try. Only
 * those long enough to pass the length rule are kept (a shorter one is refused anyway), built
 * on first use so that a process that sets no password pays nothing.
 */
let common: Set<string> | undefined;

/**
 * Whether `password` is on the list, in any letter case: the list is lower case, and `Password1`
 * is tried as early as `password1`.
 */
export function isCommonPassword(password: string): boolean {
  common ??= new Set(dictionary['passwords-common'].filter((p) => p.length >= MIN_PASSWORD_LENGTH));
  return common.has(password.toLowerCase());
}
