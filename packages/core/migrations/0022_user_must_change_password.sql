-- Users created by an admin get a one-time password (docs/decisions/users-and-access-tokens.md):
-- until they choose their own, their access tokens open only the password change and the session.
alter table users add column must_change_password boolean not null default false;
