import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Nullable, PageQuery, Uuid } from '../validation/formats';
import { ENVIRONMENTS, SCOPE_NAMES, type Environment, type Scope } from '../scopes';

/**
 * Request and response schemas of API key management. One source for the
 * API's validation, the OpenAPI document and the CLI.
 *
 * Scopes and environments are plain `enum`s (not unions of literals) so a bad value produces one
 * readable message instead of one per alternative.
 */
export const ScopeName = Type.Unsafe<Scope>({ type: 'string', enum: [...SCOPE_NAMES] });
export const EnvironmentName = Type.Unsafe<Environment>({ type: 'string', enum: [...ENVIRONMENTS] });

export const API_KEY_NAME_MAX = 200;
export const API_KEY_MAX_ALLOWED_IPS = 100;

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 2, maxLength: API_KEY_NAME_MAX, description: 'At least 2 characters (after trimming).' }),
    scopes: Type.Array(ScopeName, { minItems: 1, description: 'At least one scope of the catalogue.' }),
    expires_at: Type.Optional(Nullable(DateTime({ description: 'A future date-time with time zone; null = never expires.' }))),
    allowed_ips: Type.Optional(
      Nullable(
        Type.Array(Type.String({ maxLength: 64 }), {
          minItems: 1,
          maxItems: API_KEY_MAX_ALLOWED_IPS,
          description: 'IPv4/IPv6 addresses or CIDR ranges; null = no restriction (an empty list is refused).',
        }),
      ),
    ),
    environments: Type.Optional(
      Nullable(
        Type.Array(EnvironmentName, {
          minItems: 1,
          uniqueItems: true,
          description: 'Environments whose assets the key may read; null = all (an empty list is refused).',
        }),
      ),
    ),
  },
  { additionalProperties: false },
);
export type CreateApiKeyInput = Static<typeof CreateApiKeyBody>;

export const ApiKeyIdParams = Type.Object({ key_id: Uuid() });

export const ApiKeyListQuery = Type.Object({ ...PageQuery });

/** ApiKeyResponse, exactly; `key` only in the creation and rotation responses. */
export const ApiKeyResponse = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    prefix: Type.String({ description: 'First 12 characters of the key.' }),
    is_active: Type.Boolean(),
    last_used_at: Nullable(DateTime()),
    expires_at: Nullable(DateTime()),
    allowed_ips: Nullable(Type.Array(Type.String())),
    scopes: Type.Array(Type.String()),
    environments: Nullable(Type.Array(EnvironmentName)),
    created_at: DateTime(),
  },
  { additionalProperties: false },
);
export type ApiKeyResponse = Static<typeof ApiKeyResponse>;

export const ApiKeyWithSecretResponse = Type.Object(
  {
    ...ApiKeyResponse.properties,
    key: Type.String({ description: 'The full secret (svc_ak_…). Shown only in this response.' }),
  },
  { additionalProperties: false },
);
export type ApiKeyWithSecretResponse = Static<typeof ApiKeyWithSecretResponse>;

export const AvailableScopeResponse = Type.Object(
  {
    scope: ScopeName,
    description: Type.String(),
    group: Type.String(),
  },
  { additionalProperties: false },
);
