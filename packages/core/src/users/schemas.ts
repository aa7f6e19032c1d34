import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Uuid } from '../validation/formats';

export const USER_ROLES = ['admin', 'member'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export const MIN_PASSWORD_LENGTH = 8;
// scrypt work grows with the input; a cap keeps one request from costing more than a normal login
export const MAX_PASSWORD_LENGTH = 1024;

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: MAX_PASSWORD_LENGTH });
const Role = Type.Unsafe<UserRole>({ type: 'string', enum: [...USER_ROLES] });

export const UserCreateBody = Type.Object(
  {
    email: Email,
    password: Password,
    role: Role,
    name: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type UserCreateInput = Static<typeof UserCreateBody>;

export const PasswordBody = Type.Object({ password: Password }, { additionalProperties: false });

/** The login body: no length rule on the password, so a login never reveals the password policy. */
export const LoginBody = Type.Object(
  {
    email: Email,
    password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
  },
  { additionalProperties: false },
);
export type LoginInput = Static<typeof LoginBody>;

/** The user as shown to clients and operators (never the password hash). */
export const UserResponse = Type.Object({
  id: Uuid(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  tenant_id: Uuid(),
  is_active: Type.Boolean(),
  created_at: DateTime(),
});

/** The user inside a login response. */
export const LoginUser = Type.Object({
  id: Uuid(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  tenant_id: Uuid(),
});

export const LoginResponse = Type.Object({
  access_token: Type.String({ description: 'Shown once; send it as `Authorization: Bearer <token>`' }),
  token_type: Type.Literal('Bearer'),
  expires_at: DateTime(),
  user: LoginUser,
});

export const MeResponse = Type.Object({
  ...UserResponse.properties,
  token: Type.Object({ id: Uuid(), prefix: Type.String(), expires_at: DateTime() }),
});

export const LogoutResponse = Type.Object({ revoked: Type.Boolean() });
