import { Type, type Static } from '@sinclair/typebox';
import { DateTime, PageQuery, Uuid } from '../validation/formats';

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

const Name = Type.Union([Type.String({ minLength: 1, maxLength: 200 }), Type.Null()]);

/** An admin adds a person: the password is generated (one-time), never chosen by the admin. */
export const WorkspaceUserCreateBody = Type.Object(
  { email: Email, role: Role, name: Type.Optional(Name) },
  { additionalProperties: false },
);

export const UserUpdateBody = Type.Object(
  { role: Type.Optional(Role), name: Type.Optional(Name) },
  { additionalProperties: false },
);

export const UserIdParams = Type.Object({ user_id: Uuid() });

export const UserListQuery = Type.Object({ ...PageQuery });

/** A signed-in user's own password change. */
export const PasswordChangeBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: MAX_PASSWORD_LENGTH }),
    new_password: Password,
  },
  { additionalProperties: false },
);

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
  must_change_password: Type.Boolean({ description: 'Signed in with a one-time password not yet replaced.' }),
  created_at: DateTime(),
});

/** A user an admin has just created, with the one-time password shown this once. */
export const UserWithPasswordResponse = Type.Object({
  ...UserResponse.properties,
  one_time_password: Type.String({ description: 'Shown once; the user must replace it at the first sign-in.' }),
});

/** The user inside a login response. */
export const LoginUser = Type.Object({
  id: Uuid(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
  tenant_id: Uuid(),
  must_change_password: Type.Boolean({ description: 'true: only the password change, the session and the logout answer until it is changed.' }),
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

export const PasswordChangeResponse = Type.Object({ changed: Type.Literal(true) });

export const LogoutResponse = Type.Object({ revoked: Type.Boolean() });
