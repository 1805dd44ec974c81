import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Accounts: a v1 user (public key only) has none of these and cannot sign in with a password.
  await db.schema.alterTable('users').addColumn('username', 'text').execute();
  await db.schema.alterTable('users').addColumn('email', 'text').execute();
  await db.schema.alterTable('users').addColumn('password_hash', 'text').execute();
  await db.schema.alterTable('users').addColumn('totp_secret', 'text').execute();
  await db.schema.alterTable('users').addColumn('private_key', 'text').execute();
  // Usernames are ASCII, so lower() agrees on both databases; emails are stored lowercased.
  await sql`create unique index users_username on users (lower(username))`.execute(db);
  await db.schema.createIndex('users_email').unique().on('users').column('email').execute();

  await db.schema
    .createTable('trusted_devices')
    .addColumn('device_hash', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('trusted_devices_user').on('trusted_devices').column('user_id').execute();

  await db.schema
    .createTable('applications')
    .addColumn('client_id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('redirect_uris', 'text', (col) => col.notNull())
    .addColumn('scopes', 'text', (col) => col.notNull())
    .addColumn('secret_hash', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();

  // A browser's sign-in. mfa_pending = 1 between the password and the two-step code.
  await db.schema
    .createTable('web_sessions')
    .addColumn('session_hash', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('mfa_pending', 'integer', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();

  // An authorization waiting for the user: from GET /v4/login, or a device code typed in.
  await db.schema
    .createTable('interactions')
    .addColumn('interaction_hash', 'text', (col) => col.primaryKey())
    .addColumn('client_id', 'text', (col) => col.notNull().references('applications.client_id').onDelete('cascade'))
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('redirect_uri', 'text')
    .addColumn('state', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('device_id', 'text')
    .addColumn('device_code', 'text')
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();

  // A token family: one sign-in of a user to an application, refreshed in place.
  await db.schema
    .createTable('sessions')
    .addColumn('session_id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('client_id', 'text', (col) => col.notNull().references('applications.client_id').onDelete('cascade'))
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('access_token_hash', 'text', (col) => col.notNull().unique())
    .addColumn('access_expires_at', 'bigint', (col) => col.notNull())
    .addColumn('refresh_token_hash', 'text', (col) => col.notNull().unique())
    .addColumn('refresh_expires_at', 'bigint', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();

  // Refresh tokens already rotated away: presenting one again revokes its session.
  await db.schema
    .createTable('rotated_refresh_tokens')
    .addColumn('refresh_token_hash', 'text', (col) => col.primaryKey())
    .addColumn('session_id', 'text', (col) => col.notNull().references('sessions.session_id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();

  await db.schema
    .createTable('authorization_codes')
    .addColumn('code_hash', 'text', (col) => col.primaryKey())
    .addColumn('client_id', 'text', (col) => col.notNull().references('applications.client_id').onDelete('cascade'))
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('redirect_uri', 'text', (col) => col.notNull())
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('code_challenge', 'text', (col) => col.notNull())
    .addColumn('device_id', 'text')
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('used_at', 'bigint')
    // The session the code was exchanged for; a replayed code revokes it.
    .addColumn('session_id', 'text')
    .execute();

  await db.schema
    .createTable('device_authorizations')
    .addColumn('device_code', 'text', (col) => col.primaryKey())
    .addColumn('user_code', 'text', (col) => col.notNull().unique())
    .addColumn('client_id', 'text', (col) => col.notNull().references('applications.client_id').onDelete('cascade'))
    .addColumn('scope', 'text', (col) => col.notNull())
    .addColumn('code_challenge', 'text', (col) => col.notNull())
    // pending → approved | denied; approved → consumed when the tokens are issued.
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.references('users.user_id').onDelete('cascade'))
    .addColumn('interval_seconds', 'integer', (col) => col.notNull())
    .addColumn('last_polled_at', 'bigint')
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'device_authorizations',
    'authorization_codes',
    'rotated_refresh_tokens',
    'sessions',
    'interactions',
    'web_sessions',
    'applications',
    'trusted_devices',
  ]) {
    await db.schema.dropTable(table).execute();
  }
  await sql`drop index users_username`.execute(db);
  await db.schema.dropIndex('users_email').execute();
  for (const column of ['private_key', 'totp_secret', 'password_hash', 'email', 'username']) {
    await db.schema.alterTable('users').dropColumn(column).execute();
  }
}
