import type { FastifyInstance, FastifyReply } from 'fastify';
import { encodingChooser, noneMatchHits } from '../../http/conditional.ts';
import { badRequest, forbidden, notFound } from '../../http/errors.ts';
import { requireSignature } from '../authenticate.ts';
import { readJsonBody, readTextList, splitList } from '../body.ts';
import { modIdProblem, parseModId } from '../mods/mod-id.ts';
import { v1Docs } from '../openapi.ts';
import { type EngramListBody, EngramLists, identityStream } from './lists.ts';
import {
  deleteEngrams,
  EngramRuleError,
  type EngramWrite,
  isEngramUid,
  readEngramColumns,
  saveEngrams,
} from './store.ts';
import { ALL_BITS, ENVIRONMENTS, engramJson, engramJsonOfColumns } from './structure.ts';

const MAX_ENGRAMS_PER_REQUEST = 5_000;

function environmentBits(names: unknown, key: string, where: string, details: (field: string) => object): number {
  if (!Array.isArray(names)) throw badRequest(`${key} must be an array of environment names${where}`, details(key));
  let bits = 0;
  for (const name of names) {
    const match = Object.entries(ENVIRONMENTS).find(
      ([known]) => typeof name === 'string' && known.toLowerCase() === name.toLowerCase(),
    );
    if (!match)
      throw badRequest(
        `${key} holds an unknown environment${typeof name === 'string' ? ` "${name.slice(0, 100)}"` : ''}; known: ${Object.keys(ENVIRONMENTS).join(', ')}${where}`,
        details(key),
      );
    bits |= match[1];
  }
  return bits;
}

function parseWrite(item: unknown, index: number | undefined): EngramWrite {
  const where = index === undefined ? '' : ` (item ${index})`;
  // details name the invalid field (and the element of an array), so a client can point at it.
  const details = (field: string) => (index === undefined ? { field } : { field, index });
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    throw badRequest(`Each engram must be an object${where}`, index === undefined ? undefined : { index });
  const fields = item as Record<string, unknown>;
  if (typeof fields.path !== 'string' || fields.path.trim() === '' || fields.path.length > 1024) {
    throw badRequest(`path is required: the engram's blueprint path${where}`, details('path'));
  }
  const write: EngramWrite = { path: fields.path.trim() };
  if (fields.label !== undefined) {
    if (typeof fields.label !== 'string' || fields.label.trim() === '')
      throw badRequest(`label must be a non-empty string${where}`, details('label'));
    write.label = fields.label.trim();
  }
  if (fields.mod_id !== undefined) {
    const modId = parseModId(fields.mod_id);
    if (modId === undefined) throw badRequest(`${modIdProblem(fields.mod_id)}${where}`, details('mod_id'));
    write.modId = modId;
  }
  if (fields.environments !== undefined)
    write.availability = environmentBits(fields.environments, 'environments', where, details);
  else if (fields.availability !== undefined) {
    const value = fields.availability;
    if (Array.isArray(value)) write.availability = environmentBits(value, 'availability', where, details);
    else if (Number.isInteger(value) && (value as number) >= 0 && (value as number) <= ALL_BITS)
      write.availability = value as number;
    else
      throw badRequest(
        `availability must be a bitmask from 0 to ${ALL_BITS} or an array of environment names${where}`,
        details('availability'),
      );
  }
  if (fields.can_blueprint !== undefined) {
    if (typeof fields.can_blueprint !== 'boolean')
      throw badRequest(`can_blueprint must be true or false${where}`, details('can_blueprint'));
    write.canBlueprint = fields.can_blueprint;
  }
  return write;
}

function engramRuleErrorToApiError(error: unknown): unknown {
  if (!(error instanceof EngramRuleError)) return error;
  const details = error.element;
  switch (error.kind) {
    case 'notFound':
    case 'modNotFound':
      return notFound(error.message, details);
    case 'notYours':
    case 'notYourConfirmedMod':
      return forbidden(error.message, details);
    default:
      return badRequest(error.message, details);
  }
}

/** The quoted entity tags of a list body, per coding, made once per body. */
const tagsOfBody = new WeakMap<
  EngramListBody,
  { identity: string; br: string; gzip: string; all: readonly string[] }
>();
function listTags(body: EngramListBody) {
  let tags = tagsOfBody.get(body);
  if (!tags) {
    const [identity, br, gzip] = [`"${body.tag}"`, `"${body.tag}-br"`, `"${body.tag}-gzip"`];
    tags = { identity, br, gzip, all: [identity, br, gzip] };
    tagsOfBody.set(body, tags);
  }
  return tags;
}

export async function engramRoutes(v1: FastifyInstance): Promise<void> {
  const { config } = v1;
  const db = () => v1.database.db;
  const lists = new EngramLists(db, config);
  const chooseListEncoding = encodingChooser(['br', 'gzip'] as const);
  /** Engrams' JSON texts (engramJson) as the answer: an array, or the one engram. */
  const sendEngrams = (reply: FastifyReply, json: string[], asArray: boolean) =>
    reply.type('application/json; charset=utf-8').send(asArray ? `[${json.join(',')}]` : json[0]);

  v1.get<{ Querystring: { mod_id?: string } }>(
    '/engram.php',
    { schema: v1Docs.listEngrams, compress: false },
    async (request, reply) => {
      let modIds: string[] | undefined;
      if (request.query.mod_id !== undefined) {
        modIds = splitList(request.query.mod_id).map((item) => {
          const modId = parseModId(item);
          if (modId === undefined) throw badRequest(`mod_id "${item}" is not a workshop mod id`);
          return modId;
        });
        // `?mod_id=` names no mod: the engrams of no mod (and no `IN ()`, which PostgreSQL refuses).
        if (modIds.length === 0) return reply.type('application/json; charset=utf-8').send('[]');
      }
      const body = await lists.list(modIds);
      const encoding = body.br ? chooseListEncoding(request.headers['accept-encoding']) : undefined;
      const tags = listTags(body);
      // Public content, revalidated on every use: any write may change it.
      reply
        .header('vary', 'Accept-Encoding')
        .header('etag', tags[encoding ?? 'identity'])
        .header('cache-control', 'public, no-cache');
      // Any coding's tag matches: they all stand for the same JSON.
      if (noneMatchHits(request.headers['if-none-match'], tags.all)) return reply.code(304).send();
      reply.type('application/json; charset=utf-8');
      if (encoding) return reply.header('content-encoding', encoding).send(body[encoding]);
      if (body.identity.length === 1) return reply.send(body.identity[0]);
      // Its chunks as they are cached; a stream has no length of its own (HEAD answers need it too).
      return reply.header('content-length', body.length).send(identityStream(body));
    },
  );

  v1.get<{ Params: { ids: string } }>('/engram.php/:ids', { schema: v1Docs.getEngrams }, async (request, reply) => {
    const identifiers = splitList(request.params.ids);
    if (identifiers.length === 0) throw badRequest('No engram identifier given');
    const rows = await readEngramColumns(v1.database, identifiers);
    if (rows.length === 0)
      throw notFound(identifiers.length === 1 ? `No engram ${identifiers[0]}` : 'None of these engrams exists');
    const single = identifiers.length === 1 && (isEngramUid(identifiers[0]!) || rows.length === 1);
    return sendEngrams(
      reply,
      rows.map((row) => engramJsonOfColumns(config, row)),
      !single,
    );
  });

  v1.post('/engram.php', { preHandler: requireSignature, schema: v1Docs.saveEngrams }, async (request, reply) => {
    const body = readJsonBody(request);
    const items = Array.isArray(body) ? body : [body];
    if (items.length === 0) throw badRequest('The array of engrams is empty');
    if (items.length > MAX_ENGRAMS_PER_REQUEST)
      throw badRequest(`At most ${MAX_ENGRAMS_PER_REQUEST} engrams per request`);
    const writes = items.map((item, index) => parseWrite(item, Array.isArray(body) ? index : undefined));
    const seen = new Set<string>();
    const repeated = writes.findIndex(({ path }) => seen.size === seen.add(path.toLowerCase()).size);
    if (repeated >= 0)
      throw badRequest(`Path ${writes[repeated]!.path} appears twice in the request`, { index: repeated });
    const rows = await saveEngrams(db(), request.signedBy!, writes).catch((error) => {
      throw engramRuleErrorToApiError(error);
    });
    return sendEngrams(
      reply,
      rows.map((row) => engramJson(config, row)),
      Array.isArray(body),
    );
  });

  const remove = async (userId: string, identifiers: string[]) => {
    if (identifiers.length === 0) throw badRequest('No engram identifier given');
    const uids = await deleteEngrams(db(), userId, identifiers).catch((error) => {
      throw engramRuleErrorToApiError(error);
    });
    return { deleted: uids };
  };
  v1.delete<{ Params: { ids: string } }>(
    '/engram.php/:ids',
    { preHandler: requireSignature, schema: v1Docs.deleteEngramsInPath },
    (request) => remove(request.signedBy!, splitList(request.params.ids)),
  );
  v1.delete('/engram.php', { preHandler: requireSignature, schema: v1Docs.deleteEngrams }, (request) =>
    remove(request.signedBy!, readTextList(request)),
  );
}
