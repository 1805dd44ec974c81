import type { Kysely } from 'kysely';
import { dialectOf } from '../../db/dialect.ts';
import { reusableQuery } from '../../db/reusable-query.ts';
import type { DocumentsTable, Schema } from '../../db/schema.ts';
import { batchPerTurn } from './per-turn-batch.ts';

/** Everything of a document but its content. */
export type DocumentRow = Pick<
  DocumentsTable,
  'document_id' | 'user_id' | 'name' | 'description' | 'revision' | 'download_count' | 'last_updated'
>;

export interface DocumentWrite {
  documentId: string;
  name: string;
  description: string;
  /** The document exactly as posted. */
  content: string;
}

export interface ListOptions {
  userId?: string;
  sort: 'last_updated' | 'download_count';
  direction: 'asc' | 'desc';
  /** No limit when undefined. */
  count?: number;
  offset: number;
}

/** A write or delete broke a rule; `index` is the position of the document in the request. */
export class DocumentRuleError extends Error {
  constructor(
    readonly kind: 'notFound' | 'notYours' | 'noSuchUser',
    readonly documentId: string,
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}

const columns = [
  'document_id',
  'user_id',
  'name',
  'description',
  'revision',
  'download_count',
  'last_updated',
] as const;

export async function documentExists(db: Kysely<Schema>, documentId: string): Promise<boolean> {
  const row = await db
    .selectFrom('documents')
    .select('document_id')
    .where('document_id', '=', documentId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Metadata of the documents among `documentIds` that exist, in no particular order. */
export async function findDocuments(db: Kysely<Schema>, documentIds: readonly string[]): Promise<DocumentRow[]> {
  if (documentIds.length === 0) return [];
  return db.selectFrom('documents').select(columns).where('document_id', 'in', documentIds).execute();
}

/** One page of metadata; ties of the sort column are ordered by document_id, so pages are stable. */
export async function listDocuments(db: Kysely<Schema>, options: ListOptions): Promise<DocumentRow[]> {
  let query = db.selectFrom('documents').select(columns);
  if (options.userId !== undefined) query = query.where('user_id', '=', options.userId);
  query = query.orderBy(options.sort, options.direction).orderBy('document_id', options.direction);
  // SQLite has no OFFSET without LIMIT; the largest exact integer stands for "no limit".
  if (options.count !== undefined) query = query.limit(options.count);
  else if (options.offset > 0) query = query.limit(Number.MAX_SAFE_INTEGER);
  if (options.offset > 0) query = query.offset(options.offset);
  return query.execute();
}

/**
 * A download: counts it and answers the name and content. Downloads of one document that arrive
 * in the same turn of the event loop are counted together by one statement (+N, answering the
 * row; see batchPerTurn), so concurrent downloads each still add exactly one, every answer is sent
 * after its count is stored, and a burst costs one write instead of one per request (the write was
 * the largest cost of a download). Undefined when the document does not exist.
 */
export function downloadDocument(
  db: Kysely<Schema>,
  documentId: string,
): Promise<{ name: string; content: string } | undefined> {
  let download = downloads.get(db);
  if (!download) {
    download = batchPerTurn(
      async (id: string, count: number) => (await countDownloads(db, { documentId: id, count }))[0],
    );
    downloads.set(db, download);
  }
  return download(documentId);
}

/** The batched download of each database (tests run several apps in one process). */
const downloads = new WeakMap<
  Kysely<Schema>,
  (documentId: string) => Promise<{ name: string; content: string } | undefined>
>();

const countDownloads = reusableQuery(
  (db: Kysely<Schema>, { documentId, count }: { documentId: string; count: number }) =>
    db
      .updateTable('documents')
      .set((eb) => ({ download_count: eb('download_count', '+', count) }))
      .where('document_id', '=', documentId)
      .returning(['name', 'content']),
);

/**
 * Creates (revision 1) or updates (revision + 1) every document, or none: one transaction,
 * aborted by a document that belongs to another user. Answers the rows in the given order.
 * Each write is a single upsert whose update applies only to the caller's own row, so
 * concurrent updates serialise on the row and none is lost.
 */
export async function saveDocuments(
  db: Kysely<Schema>,
  userId: string,
  documents: readonly DocumentWrite[],
): Promise<DocumentRow[]> {
  const now = Date.now();
  try {
    return await db.transaction().execute(async (trx) => {
      const saved: DocumentRow[] = new Array(documents.length);
      // Rows are written (and locked) in id order, so two overlapping requests cannot deadlock.
      const order = [...documents.keys()].sort((a, b) =>
        documents[a]!.documentId < documents[b]!.documentId ? -1 : 1,
      );
      for (const index of order) {
        const document = documents[index]!;
        const row = await trx
          .insertInto('documents')
          .values({
            document_id: document.documentId,
            user_id: userId,
            name: document.name,
            description: document.description,
            revision: 1,
            download_count: 0,
            content: document.content,
            created_at: now,
            last_updated: now,
          })
          .onConflict((conflict) =>
            conflict
              .column('document_id')
              .doUpdateSet((eb) => ({
                name: eb.ref('excluded.name'),
                description: eb.ref('excluded.description'),
                content: eb.ref('excluded.content'),
                last_updated: eb.ref('excluded.last_updated'),
                revision: eb('documents.revision', '+', 1),
              }))
              .where('documents.user_id', '=', userId),
          )
          .returning(columns)
          .executeTakeFirst();
        if (!row) {
          throw new DocumentRuleError(
            'notYours',
            document.documentId,
            index,
            `Document ${document.documentId} belongs to another user`,
          );
        }
        saved[index] = row;
      }
      return saved;
    });
  } catch (error) {
    // The signing user was deleted while this request ran.
    if (isForeignKeyViolation(error))
      throw new DocumentRuleError('noSuchUser', documents[0]?.documentId ?? '', 0, `User ${userId} no longer exists`);
    throw error;
  }
}

/**
 * Deletes every document of `documentIds` or none: each must exist and belong to `userId`.
 * The delete runs first (on SQLite it is the transaction's first statement, so it takes the
 * write lock at once) and is rolled back when it missed any.
 */
export async function deleteDocuments(
  db: Kysely<Schema>,
  userId: string,
  documentIds: readonly string[],
): Promise<void> {
  if (documentIds.length === 0) return;
  await db.transaction().execute(async (trx) => {
    if (dialectOf(trx) === 'postgres') {
      // Lock the rows in id order first, as saveDocuments writes them, so overlapping requests cannot deadlock.
      await trx
        .selectFrom('documents')
        .select('document_id')
        .where('document_id', 'in', documentIds)
        .orderBy('document_id')
        .forUpdate()
        .execute();
    }
    const deleted = await trx
      .deleteFrom('documents')
      .where('document_id', 'in', documentIds)
      .where('user_id', '=', userId)
      .returning('document_id')
      .execute();
    if (deleted.length === documentIds.length) return;
    const gone = new Set(deleted.map((row) => row.document_id));
    const others = await trx
      .selectFrom('documents')
      .select('document_id')
      .where('document_id', 'in', documentIds)
      .execute();
    const existing = new Set(others.map((row) => row.document_id));
    for (const [index, documentId] of documentIds.entries()) {
      if (gone.has(documentId)) continue;
      if (existing.has(documentId))
        throw new DocumentRuleError('notYours', documentId, index, `Document ${documentId} belongs to another user`);
      throw new DocumentRuleError('notFound', documentId, index, `Document ${documentId} does not exist`);
    }
  });
}

function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}
