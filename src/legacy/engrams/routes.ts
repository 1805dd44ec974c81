import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.ts';
import { badRequest, forbidden, notFound } from '../../http/errors.ts';
import { requireSignature } from '../authenticate.ts';
import { readJsonBody, readTextList, splitList } from '../body.ts';
import { parseModId } from '../mods/routes.ts';
import { deleteEngrams, EngramRuleError, findEngrams, isEngramUid, saveEngrams, streamEngrams, type EngramRow, type EngramWrite } from './store.ts';

/** Availability bits of the game's maps. */
const ENVIRONMENTS = { Island: 1, Scorched: 2, Center: 4, Ragnarok: 8, Abberation: 16 } as const;
const ALL_BITS = 31;
const MAX_ENGRAMS_PER_REQUEST = 5_000;

export function environmentNames(availability: number): string[] {
  return Object.entries(ENVIRONMENTS)
    .filter(([, bit]) => (availability & bit) !== 0)
    .map(([name]) => name);
}

function environmentBits(names: unknown, key: string, where: string, details: (field: string) => object): number {
  if (!Array.isArray(names)) throw badRequest(`${key} must be an array of environment names${where}`, details(key));
  let bits = 0;
  for (const name of names) {
    const match = Object.entries(ENVIRONMENTS).find(([known]) => typeof name === 'string' && known.toLowerCase() === name.toLowerCase());
    if (!match) throw badRequest(`${key} holds an unknown environment ${JSON.stringify(name)}; known: ${Object.keys(ENVIRONMENTS).join(', ')}${where}`, details(key));
    bits |= match[1];
  }
  return bits;
}

export function engramStructure(config: Config, row: EngramRow) {
  return {
    path: row.path,
    class: row.class,
    label: row.label,
    environments: environmentNames(row.availability),
    can_blueprint: row.can_blueprint === 1,
    spawn: `cheat giveitem "Blueprint'${row.path}'" 1 0 false`,
    uid: row.uid,
    resource_url: `${config.baseUrl}/v1/engram.php/${row.uid}`,
    mod_id: row.mod_id === null ? null : Number(row.mod_id),
    mod_name: row.mod_name,
  };
}

function parseWrite(item: unknown, index: number | undefined): EngramWrite {
  const where = index === undefined ? '' : ` (item ${index})`;
  // details name the invalid field (and the element of an array), so a client can point at it.
  const details = (field: string) => (index === undefined ? { field } : { field, index });
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw badRequest(`Each engram must be an object${where}`, index === undefined ? undefined : { index });
  const fields = item as Record<string, unknown>;
  if (typeof fields.path !== 'string' || fields.path.trim() === '' || fields.path.length > 1024) {
    throw badRequest(`path is required: the engram's blueprint path${where}`, details('path'));
  }
  const write: EngramWrite = { path: fields.path.trim() };
  if (fields.label !== undefined) {
    if (typeof fields.label !== 'string' || fields.label.trim() === '') throw badRequest(`label must be a non-empty string${where}`, details('label'));
    write.label = fields.label.trim();
  }
  if (fields.mod_id !== undefined) {
    const modId = parseModId(fields.mod_id);
    if (modId === undefined) throw badRequest(`mod_id must be a workshop mod id${where}`, details('mod_id'));
    write.modId = modId;
  }
  if (fields.environments !== undefined) write.availability = environmentBits(fields.environments, 'environments', where, details);
  else if (fields.availability !== undefined) {
    const value = fields.availability;
    if (Array.isArray(value)) write.availability = environmentBits(value, 'availability', where, details);
    else if (Number.isInteger(value) && (value as number) >= 0 && (value as number) <= ALL_BITS) write.availability = value as number;
    else throw badRequest(`availability must be a bitmask from 0 to ${ALL_BITS} or an array of environment names${where}`, details('availability'));
  }
  if (fields.can_blueprint !== undefined) {
    if (typeof fields.can_blueprint !== 'boolean') throw badRequest(`can_blueprint must be true or false${where}`, details('can_blueprint'));
    write.canBlueprint = fields.can_blueprint;
  }
  return write;
}

function toApiError(error: unknown): unknown {
  if (!(error instanceof EngramRuleError)) return error;
  const details = error.element;
  switch (error.kind) {
    case 'notFound':
      return notFound(error.message, details);
    case 'notYours':
    case 'notYourConfirmedMod':
      return forbidden(error.message, details);
    default:
      return badRequest(error.message, details);
  }
}

export async function engramRoutes(v1: FastifyInstance): Promise<void> {
  const { config } = v1;
  const db = () => v1.database.db;

  v1.get<{ Querystring: { mod_id?: string } }>('/engram.php', async (request, reply) => {
    let modIds: string[] | undefined;
    if (request.query.mod_id !== undefined) {
      modIds = splitList(request.query.mod_id).map((item) => {
        const modId = parseModId(item);
        if (modId === undefined) throw badRequest(`mod_id "${item}" is not a workshop mod id`);
        return modId;
      });
    }
    const chunks = streamEngrams(db(), modIds);
    // One write per chunk of rows, not per engram: ten thousand tiny writes cost more than the JSON.
    async function* json() {
      let separator = '[';
      for await (const rows of chunks) {
        yield separator + rows.map((row) => JSON.stringify(engramStructure(config, row))).join(',');
        separator = ',';
      }
      yield separator === '[' ? '[]' : ']';
    }
    return reply.type('application/json; charset=utf-8').send(Readable.from(json()));
  });

  v1.get<{ Params: { ids: string } }>('/engram.php/:ids', async (request) => {
    const identifiers = splitList(request.params.ids);
    if (identifiers.length === 0) throw badRequest('No engram identifier given');
    const rows = await findEngrams(db(), identifiers);
    if (rows.length === 0) throw notFound(identifiers.length === 1 ? `No engram ${identifiers[0]}` : 'None of these engrams exists');
    const engrams = rows.map((row) => engramStructure(config, row));
    const single = identifiers.length === 1 && (isEngramUid(identifiers[0]!) || engrams.length === 1);
    return single ? engrams[0] : engrams;
  });

  v1.post('/engram.php', { preHandler: requireSignature }, async (request) => {
    const body = readJsonBody(request);
    const items = Array.isArray(body) ? body : [body];
    if (items.length === 0) throw badRequest('The array of engrams is empty');
    if (items.length > MAX_ENGRAMS_PER_REQUEST) throw badRequest(`At most ${MAX_ENGRAMS_PER_REQUEST} engrams per request`);
    const writes = items.map((item, index) => parseWrite(item, Array.isArray(body) ? index : undefined));
    const uids = writes.map((write) => write.path.toLowerCase());
    const repeated = uids.findIndex((uid, index) => uids.indexOf(uid) !== index);
    if (repeated >= 0) throw badRequest(`Path ${writes[repeated]!.path} appears twice in the request`, { index: repeated });
    const saved = await saveEngrams(db(), request.signedBy!, writes).catch((error) => {
      throw toApiError(error);
    });
    const rows = await findEngrams(db(), saved);
    const byUid = new Map(rows.map((row) => [row.uid, engramStructure(config, row)]));
    const engrams = saved.map((uid) => byUid.get(uid));
    return Array.isArray(body) ? engrams : engrams[0];
  });

  const remove = async (userId: string, identifiers: string[]) => {
    if (identifiers.length === 0) throw badRequest('No engram identifier given');
    const uids = await deleteEngrams(db(), userId, identifiers).catch((error) => {
      throw toApiError(error);
    });
    return { deleted: uids };
  };
  v1.delete<{ Params: { ids: string } }>('/engram.php/:ids', { preHandler: requireSignature }, (request) =>
    remove(request.signedBy!, splitList(request.params.ids)),
  );
  v1.delete('/engram.php', { preHandler: requireSignature }, (request) => remove(request.signedBy!, readTextList(request)));
}

