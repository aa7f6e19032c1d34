import { t } from '../i18n';
import { ENVIRONMENTS, type Asset, type Environment } from '../lib/api';
import type { AssetType, EnvInput } from '../lib/catalogue';
import { Field } from './Field';

export type EnvInputs = Record<Environment, EnvInput>;

/** One of something per environment, each made by `make`. */
export function perEnvironment<T>(make: (env: Environment) => T): Record<Environment, T> {
  return { dev: make('dev'), staging: make('staging'), production: make('production') };
}

/**
 * An asset's value in each environment, as its type asks: a text, a whole number, yes or no, or a
 * credential's user name and password. A stored value can be removed.
 */
export function AssetValuesField({ type, values, stored, error, onChange }: {
  type: AssetType;
  values: EnvInputs;
  /** the values the record has (an edit), which the remove check boxes are for */
  stored?: Asset['values'];
  error?: string;
  onChange(env: Environment, patch: Partial<EnvInput>): void;
}) {
  return (
    <fieldset className="asset-values" aria-describedby={['values-hint', error && 'values-error'].filter(Boolean).join(' ')}>
      <legend>{t.assets.values}</legend>
      <p className="hint" id="values-hint">{t.assets.valuesHint}{type === 'credential' && <> {t.assets.passwordHint}</>}</p>
      {error && <p className="field-error" id="values-error">{error}</p>}
      <div className="form-grid">
        {ENVIRONMENTS.map((env) => (
          <div key={env} className="env-value" data-env-input={env}>
            {type === 'credential' ? (
              <>
                <Field id={`value-${env}-username`} label={t.assets.username(env)}>
                  <input id={`value-${env}-username`} value={values[env].username} autoComplete="off" disabled={values[env].remove}
                    onChange={(e) => onChange(env, { username: e.target.value })} />
                </Field>
                <Field id={`value-${env}-password`} label={t.assets.password(env)}>
                  <input id={`value-${env}-password`} type="password" value={values[env].password} autoComplete="new-password" disabled={values[env].remove}
                    onChange={(e) => onChange(env, { password: e.target.value })} />
                </Field>
              </>
            ) : type === 'boolean' ? (
              <Field id={`value-${env}`} label={t.assets.value(env)}>
                <select id={`value-${env}`} value={values[env].text} disabled={values[env].remove} onChange={(e) => onChange(env, { text: e.target.value })}>
                  {['', 'true', 'false'].map((b) => <option key={b} value={b}>{t.assets.booleanChoices[b]}</option>)}
                </select>
              </Field>
            ) : (
              <Field id={`value-${env}`} label={t.assets.value(env)}>
                <input id={`value-${env}`} value={values[env].text} disabled={values[env].remove}
                  inputMode={type === 'integer' ? 'numeric' : undefined} onChange={(e) => onChange(env, { text: e.target.value })} />
              </Field>
            )}
            {stored && stored[env] !== null && stored[env] !== undefined && (
              <label className="check">
                <input type="checkbox" checked={values[env].remove} onChange={(e) => onChange(env, { remove: e.target.checked })} />
                <span>{t.assets.remove(env)}</span>
              </label>
            )}
          </div>
        ))}
      </div>
    </fieldset>
  );
}
