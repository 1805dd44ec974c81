import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // The last TOTP time step accepted for the user: a code is accepted only for a later step
  // (RFC 6238 §5.2), so a code cannot be used twice.
  await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('totp_last_step').execute();
}
