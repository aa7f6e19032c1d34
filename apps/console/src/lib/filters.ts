/**
 * A list page's filters after `changes` (an empty value removes its filter), from the address as
 * it is now: react-router's updater gets the parameters of the last render, so a second change
 * before the page renders again would undo the first. Any change but the page itself starts
 * again on page 1.
 */
export function nextFilterParams(currentSearch: string, changes: Record<string, string>): URLSearchParams {
  const next = new URLSearchParams(currentSearch);
  for (const [k, v] of Object.entries(changes)) (v ? next.set(k, v) : next.delete(k));
  if (!('page' in changes)) next.delete('page');
  return next;
}
