import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // The keys ID tokens (and logout tokens) are signed with: one row per key, public part as a JWK,
  // private part PKCS#8 sealed under SECRETS_KEY. A key signs from signs_from until a newer key of
  // its algorithm does, and stays published while tokens it signed may still be checked.
  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (col) => col.primaryKey())
    .addColumn('alg', 'text', (col) => col.notNull())
    .addColumn('public_jwk', 'text', (col) => col.notNull())
    .addColumn('private_key', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('signs_from', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('signing_keys_alg').on('signing_keys').columns(['alg', 'signs_from']).execute();

  // How the browser sign-in proved who the person is (RFC 8176 values, JSON array); null: a
  // password (sign-ins made before this column).
  await db.schema.alterTable('web_sessions').addColumn('auth_methods', 'text').execute();

  // OpenID Connect's request parameters, kept while the person signs in and approves.
  await db.schema.alterTable('interactions').addColumn('nonce', 'text').execute();
  await db.schema.alterTable('interactions').addColumn('login_hint', 'text').execute();
  // The oldest sign-in the request accepts (prompt=login: none before the request; max_age).
  await db.schema.alterTable('interactions').addColumn('min_auth_time', 'bigint').execute();

  // What the ID token states about the sign-in behind the grant, carried from the code to the
  // session (every refresh issues an ID token with the same auth_time), and the browser sign-in
  // (its session_hash) the session was started from, so a logout there can end it.
  for (const table of ['authorization_codes', 'sessions']) {
    await db.schema.alterTable(table).addColumn('nonce', 'text').execute();
    await db.schema.alterTable(table).addColumn('auth_time', 'bigint').execute();
    await db.schema.alterTable(table).addColumn('auth_methods', 'text').execute();
    await db.schema.alterTable(table).addColumn('web_session_hash', 'text').execute();
  }
  await db.schema.createIndex('sessions_web_session').on('sessions').column('web_session_hash').execute();

  // Registration for OpenID Connect logout and the ID token's algorithm (null: RS256).
  await db.schema.alterTable('applications').addColumn('post_logout_redirect_uris', 'text').execute();
  await db.schema.alterTable('applications').addColumn('backchannel_logout_uri', 'text').execute();
  await db.schema.alterTable('applications').addColumn('id_token_signed_response_alg', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['id_token_signed_response_alg', 'backchannel_logout_uri', 'post_logout_redirect_uris'])
    await db.schema.alterTable('applications').dropColumn(column).execute();
  await db.schema.dropIndex('sessions_web_session').execute();
  for (const table of ['sessions', 'authorization_codes'])
    for (const column of ['web_session_hash', 'auth_methods', 'auth_time', 'nonce'])
      await db.schema.alterTable(table).dropColumn(column).execute();
  for (const column of ['min_auth_time', 'login_hint', 'nonce'])
    await db.schema.alterTable('interactions').dropColumn(column).execute();
  await db.schema.alterTable('web_sessions').dropColumn('auth_methods').execute();
  await db.schema.dropTable('signing_keys').execute();
}
