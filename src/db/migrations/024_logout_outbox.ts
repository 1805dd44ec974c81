import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // Back-channel logout's outbox: one row per ended session whose application registered a
  // back-channel URI, written in the transaction that ended it, delivered after the commit by
  // any instance. next_attempt_at is both when it is due and, while an instance sends it, that
  // instance's lease (a conditional update claims it).
  await db.schema
    .createTable('backchannel_logouts')
    .addColumn('session_id', 'text', (col) => col.primaryKey())
    .addColumn('client_id', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('backchannel_logouts_due').on('backchannel_logouts').column('next_attempt_at').execute();
  await db.schema.createIndex('backchannel_logouts_expiry').on('backchannel_logouts').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('backchannel_logouts').execute();
}
