import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { ApiError, badRequest, forbidden, notFound } from '../../http/errors.ts';
import { textBody } from '../../http/text-body.ts';
import { isUuid, normalizeUuid } from '../../http/uuid.ts';
import { requireSignature } from '../authenticate.ts';
import { readJsonBody, readTextList, splitList } from '../body.ts';
import { v1Docs } from '../openapi.ts';
import { splitJsonArray } from './json-elements.ts';
import {
  type DocumentRow,
  DocumentRuleError,
  type DocumentWrite,
  deleteDocuments,
  documentExists,
  downloadDocument,
  findDocuments,
  type ListOptions,
  listDocuments,
  saveDocuments,
} from './store.ts';

interface IdParams {
  ids: string;
}

type Query = Record<string, string | string[] | undefined>;

/** "YYYY-MM-DD HH:MM:SS+0000" in UTC. */
export function sqlDateTime(milliseconds: number): string {
  return `${new Date(milliseconds).toISOString().slice(0, 19).replace('T', ' ')}+0000`;
}

export function documentMetadata(config: Config, row: DocumentRow) {
  return {
    document_id: row.document_id,
    user_id: row.user_id,
    name: row.name,
    description: row.description,
    revision: row.revision,
    download_count: row.download_count,
    last_updated: sqlDateTime(row.last_updated),
    resource_url: `${config.baseUrl}/v1/document.php/${row.document_id}`,
  };
}

/** The download filename: the name without characters outside [A-Za-z0-9 _()-], plus .beacon. */
export function downloadFilename(name: string, documentId: string): string {
  const kept = name.replace(/[^A-Za-z0-9 _()-]/g, '');
  return `${kept.trim() === '' ? documentId : kept}.beacon`;
}

function queryValue(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw badRequest(`Query parameter ${name} is given more than once`, { parameter: name });
  return value;
}

function rejectUnknownParameters(query: Query, known: readonly string[]): void {
  const unknown = Object.keys(query).find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw badRequest(`Unknown query parameter ${unknown}; known: ${known.join(', ') || 'none'}`, {
      parameter: unknown,
    });
  }
}

const LIST_PARAMETERS = ['user_id', 'sort', 'direction', 'count', 'offset'] as const;

/** The listing parameters; any unknown parameter or invalid value is a 400 naming it. */
export function parseListQuery(query: Query): ListOptions {
  rejectUnknownParameters(query, LIST_PARAMETERS);
  const invalid = (name: string, expected: string, value: string) =>
    badRequest(`Invalid query parameter ${name}: ${expected}`, { parameter: name, value });
  const options: ListOptions = { sort: 'last_updated', direction: 'desc', offset: 0 };

  const userId = queryValue(query, 'user_id');
  if (userId !== undefined) {
    if (!isUuid(userId)) throw invalid('user_id', 'must be a user UUID', userId);
    options.userId = normalizeUuid(userId);
  }
  const sort = queryValue(query, 'sort');
  if (sort !== undefined) {
    if (sort !== 'last_updated' && sort !== 'download_count')
      throw invalid('sort', 'must be last_updated or download_count', sort);
    options.sort = sort;
  }
  const direction = queryValue(query, 'direction');
  if (direction !== undefined) {
    if (direction !== 'asc' && direction !== 'desc') throw invalid('direction', 'must be desc or asc', direction);
    options.direction = direction;
  }
  const count = queryValue(query, 'count');
  if (count !== undefined) {
    const value = /^\d{1,16}$/.test(count) ? Number(count) : NaN;
    if (!Number.isSafeInteger(value) || value < 1) throw invalid('count', 'must be a positive integer', count);
    options.count = value;
  }
  const offset = queryValue(query, 'offset');
  if (offset !== undefined) {
    const value = /^\d{1,16}$/.test(offset) ? Number(offset) : NaN;
    if (!Number.isSafeInteger(value)) throw invalid('offset', 'must be an integer of 0 or more', offset);
    options.offset = value;
  }
  return options;
}

/** Where an element of the request is, for messages and details. */
interface Position {
  index: number | undefined;
  identifier: unknown;
}

const where = (position: Position) => (position.index === undefined ? '' : ` (item ${position.index})`);

function elementDetails(position: Position): Record<string, unknown> {
  const identifier = position.identifier === undefined ? null : position.identifier;
  return position.index === undefined ? { Identifier: identifier } : { index: position.index, Identifier: identifier };
}

/** Checks one posted document (content shape) and derives its metadata. */
export function parseDocument(item: unknown, content: string, index: number | undefined): DocumentWrite {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    throw badRequest(
      `Each document must be a JSON object${where({ index, identifier: undefined })}`,
      elementDetails({ index, identifier: undefined }),
    );
  }
  const fields = item as Record<string, unknown>;
  const position: Position = { index, identifier: fields.Identifier };
  const fail = (message: string) => badRequest(`${message}${where(position)}`, elementDetails(position));
  if (!isUuid(fields.Identifier)) throw fail('Identifier is required and must be a UUID');
  if (typeof fields.Title !== 'string') throw fail('Title is required and must be a string');
  if (typeof fields.Description !== 'string') throw fail('Description is required and must be a string');
  if (!Array.isArray(fields.LootSources)) throw fail('LootSources is required and must be an array');
  if (fields.Version !== undefined && !Number.isSafeInteger(fields.Version)) throw fail('Version must be an integer');
  return { documentId: normalizeUuid(fields.Identifier), name: fields.Title, description: fields.Description, content };
}

/** The body as text; JSON is UTF-8 (RFC 8259), and the content is kept byte for byte, so no replacement characters. */
function strictUtf8(body: Buffer | undefined): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body ?? Buffer.alloc(0));
  } catch {
    throw badRequest('The request body is not valid UTF-8');
  }
}

/** The documents of a POST body, each with its content text exactly as posted. */
export function readDocuments(request: FastifyRequest): {
  documents: DocumentWrite[];
  identifiers: unknown[];
  isArray: boolean;
} {
  const body = readJsonBody(request);
  const text = strictUtf8(request.rawBody);
  if (!Array.isArray(body))
    return {
      documents: [parseDocument(body, text, undefined)],
      identifiers: [(body as { Identifier?: unknown }).Identifier],
      isArray: false,
    };
  if (body.length === 0) throw badRequest('The array of documents is empty');
  const texts = splitJsonArray(text);
  if (texts.length !== body.length)
    throw new Error(`splitJsonArray found ${texts.length} elements, JSON.parse ${body.length}`);
  const documents = body.map((item, index) => parseDocument(item, texts[index]!, index));
  const seen = new Map<string, number>();
  for (const [index, document] of documents.entries()) {
    const first = seen.get(document.documentId);
    if (first !== undefined) {
      throw badRequest(`Document ${document.documentId} appears twice in the request (items ${first} and ${index})`, {
        index,
        Identifier: (body[index] as { Identifier: string }).Identifier,
      });
    }
    seen.set(document.documentId, index);
  }
  return { documents, identifiers: body.map((item) => (item as { Identifier: unknown }).Identifier), isArray: true };
}

/** Ids of a DELETE: every one must be a UUID; repeats (in any case) count once. */
function documentIdsFrom(list: string[]): string[] {
  if (list.length === 0) throw badRequest('No document id given');
  for (const [index, item] of list.entries()) {
    if (!isUuid(item)) throw badRequest(`"${item}" is not a document UUID`, { index, document_id: item });
  }
  return [...new Set(list.map(normalizeUuid))];
}

/** A store rule error as the API error; `posted` describes the POST's elements (for details). */
function documentRuleErrorToApiError(error: unknown, posted?: { identifiers: unknown[]; isArray: boolean }): unknown {
  if (!(error instanceof DocumentRuleError)) return error;
  if (error.kind === 'noSuchUser') return forbidden(error.message);
  const details = posted
    ? elementDetails({ index: posted.isArray ? error.index : undefined, identifier: posted.identifiers[error.index] })
    : { document_id: error.documentId };
  const message = posted?.isArray ? `${error.message} (item ${error.index})` : error.message;
  return error.kind === 'notFound' ? notFound(message, details) : forbidden(message, details);
}

export async function documentRoutes(v1: FastifyInstance): Promise<void> {
  const { config } = v1;
  const db = () => v1.database.db;

  // Declared before the GET, so Fastify does not add its own HEAD for this path.
  v1.head<{ Params: IdParams }>('/document.php/:ids', { schema: v1Docs.documentExists }, async (request, reply) => {
    const raw = request.params.ids;
    if (raw.includes(',') || !isUuid(raw.trim())) {
      throw new ApiError(405, 'HEAD checks one document: give a single document UUID (GET answers a list of ids)', {
        headers: { allow: 'GET, DELETE' },
      });
    }
    if (!(await documentExists(db(), normalizeUuid(raw.trim()))))
      throw notFound(`Document ${raw.trim()} is not published`);
    return reply.code(200).send();
  });

  v1.get<{ Querystring: Query }>('/document.php', { schema: v1Docs.listDocuments }, async (request) => {
    const rows = await listDocuments(db(), parseListQuery(request.query));
    return rows.map((row) => documentMetadata(config, row));
  });

  v1.get<{ Params: IdParams; Querystring: Query }>(
    '/document.php/:ids',
    { exposeHeadRoute: false, schema: v1Docs.getDocuments },
    async (request, reply) => {
      rejectUnknownParameters(request.query, ['simple']);
      const raw = request.params.ids;
      const ids = [...new Set(splitList(raw).map(normalizeUuid))];

      // The shape of the path decides the shape of the answer: a comma means a list.
      if (raw.includes(',')) {
        const rows = await findDocuments(db(), ids.filter(isUuid));
        if (rows.length === 0) throw notFound('None of the documents was found');
        const byId = new Map(rows.map((row) => [row.document_id, row]));
        return ids.flatMap((id) => {
          const row = byId.get(id);
          return row ? [documentMetadata(config, row)] : [];
        });
      }

      const id = ids[0] ?? '';
      if (!isUuid(id)) throw notFound(`Document ${id} not found`);
      if (request.query.simple !== undefined) {
        const [row] = await findDocuments(db(), [id]);
        if (!row) throw notFound(`Document ${id} not found`, { document_id: id });
        return documentMetadata(config, row);
      }
      const document = await downloadDocument(db(), id);
      if (!document) throw notFound(`Document ${id} not found`, { document_id: id });
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-disposition', `attachment; filename="${downloadFilename(document.name, id)}"`)
        .header('cache-control', 'no-store')
        .send(textBody(document.content));
    },
  );

  v1.post('/document.php', { preHandler: requireSignature, schema: v1Docs.saveDocuments }, async (request) => {
    const posted = readDocuments(request);
    const rows = await saveDocuments(db(), request.signedBy!, posted.documents).catch((error) => {
      throw documentRuleErrorToApiError(error, posted);
    });
    const metadata = rows.map((row) => documentMetadata(config, row));
    return posted.isArray ? metadata : metadata[0];
  });

  const remove = async (request: FastifyRequest, documentIds: string[]) => {
    await deleteDocuments(db(), request.signedBy!, documentIds).catch((error) => {
      throw documentRuleErrorToApiError(error);
    });
    return { deleted: documentIds };
  };
  v1.delete<{ Params: IdParams }>(
    '/document.php/:ids',
    { preHandler: requireSignature, schema: v1Docs.deleteDocumentsInPath },
    (request) => remove(request, documentIdsFrom(splitList(request.params.ids))),
  );
  v1.delete('/document.php', { preHandler: requireSignature, schema: v1Docs.deleteDocuments }, (request) =>
    remove(request, documentIdsFrom(readTextList(request))),
  );
}
