import { useEffect, useRef } from 'react';

/** Moves the focus to an element when it first appears (a panel the user just opened). */
export function useFocusOnMount<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => ref.current?.focus(), []);
  return ref;
}
