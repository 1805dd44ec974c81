import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // A user's WebAuthn credentials (passkeys). The credential id and public key are base64url text
  // as the browser and @simplewebauthn/server hand them over.
  await db.schema
    .createTable('passkeys')
    .addColumn('credential_id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.user_id').onDelete('cascade'))
    .addColumn('public_key', 'text', (col) => col.notNull())
    // The authenticator's signature counter; 0 for authenticators that keep none.
    .addColumn('counter', 'bigint', (col) => col.notNull())
    // JSON array of transport hints (internal, hybrid, usb…).
    .addColumn('transports', 'text', (col) => col.notNull())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('passkeys_user').on('passkeys').column('user_id').execute();

  // A WebAuthn challenge waiting for its answer: single use (deleted when answered), 5 minutes,
  // bound to the browser that asked for it (a hash of its binding cookie) and, for adding a
  // passkey, to the signed-in user.
  await db.schema
    .createTable('passkey_challenges')
    .addColumn('challenge', 'text', (col) => col.primaryKey())
    .addColumn('binding_hash', 'text', (col) => col.notNull())
    .addColumn('purpose', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.references('users.user_id').onDelete('cascade'))
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('passkey_challenges_binding').on('passkey_challenges').column('binding_hash').execute();
  await db.schema.createIndex('passkey_challenges_expires').on('passkey_challenges').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('passkey_challenges').execute();
  await db.schema.dropTable('passkeys').execute();
}
