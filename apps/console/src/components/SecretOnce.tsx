import { useRef, useState } from 'react';
import { t } from '../i18n';
import { useFocusOnMount } from './focus';

export type SecretTexts = Record<'secretWarning' | 'secretLabel' | 'copy' | 'copied' | 'copyFallback' | 'done', string>;

/**
 * A secret (an API key's, a webhook's signing secret), shown this once (it lives only in the page's state: leaving the page forgets it):
 * a warning, the text in a read-only field, and a copy button that falls back to selecting the
 * text where the clipboard API is missing or refused (an insecure origin, a denied permission).
 */
export function SecretOnce({ title, secret, onDone, texts = t.apiKeys }: {
  title: string;
  secret: string;
  onDone(): void;
  /** what the panel says: an API key's texts unless another kind of secret passes its own */
  texts?: SecretTexts;
}) {
  const heading = useFocusOnMount<HTMLHeadingElement>();
  const field = useRef<HTMLInputElement>(null);
  const [copyState, setCopyState] = useState<'idle' | 'copied' | 'selected'>('idle');

  async function copy() {
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(secret);
      setCopyState('copied');
    } catch {
      field.current?.focus();
      field.current?.select();
      setCopyState('selected');
    }
  }

  return (
    <section className="card wide secret" aria-labelledby="secret-title" data-secret-panel="">
      <h2 id="secret-title" ref={heading} tabIndex={-1}>{title}</h2>
      <p className="notice warn" id="secret-warning"><strong>{texts.secretWarning}</strong></p>
      <div className="field">
        <label htmlFor="secret-value">{texts.secretLabel}</label>
        <div className="secret-row">
          <input id="secret-value" ref={field} readOnly value={secret} spellCheck={false} aria-describedby="secret-warning"
            onFocus={(e) => e.target.select()} />
          <button type="button" onClick={() => void copy()}>{texts.copy}</button>
        </div>
      </div>
      <div role="status" aria-live="polite" className="live">
        {copyState === 'copied' && <p className="notice ok">{texts.copied}</p>}
        {copyState === 'selected' && <p className="notice">{texts.copyFallback}</p>}
      </div>
      <button type="button" className="secondary" onClick={onDone}>{texts.done}</button>
    </section>
  );
}
