import type { Generated } from 'kysely';

/** Times are stored as integer milliseconds since the epoch on both databases. */
export interface UsersTable {
  user_id: string;
  public_key: string | null;
  created_at: number;
}

export interface Schema {
  users: UsersTable;
}

export type { Generated };
