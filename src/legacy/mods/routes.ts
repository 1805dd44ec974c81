import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.ts';
import { badRequest, notFound, preconditionFailed, serviceUnavailable } from '../../http/errors.ts';
import { requireSignature } from '../authenticate.ts';
import { readJsonBody, readTextList, splitList } from '../body.ts';
import { v1Docs } from '../openapi.ts';
import { fetchWorkshopItem, type WorkshopItem, WorkshopUnavailableError, workshopUrl } from '../workshop.ts';
import { modIdProblem, parseModId } from './mod-id.ts';
import {
  confirmedByOthers,
  confirmMod,
  deleteMods,
  listMods,
  type ModRow,
  ModRuleError,
  type NewRegistration,
  registerMods,
} from './store.ts';

export { modIdProblem, parseModId };

const MAX_MODS_PER_REQUEST = 100;

export function modStructure(config: Config, row: ModRow) {
  const resourceUrl = `${config.baseUrl}/v1/mod.php/${row.mod_id}`;
  return {
    mod_id: row.mod_id,
    name: row.name,
    workshop_url: workshopUrl(config.workshopUrl, row.mod_id),
    confirmed: row.confirmed === 1,
    confirmation_code: row.confirmation_code,
    resource_url: resourceUrl,
    confirm_url: `${resourceUrl}?action=confirm`,
    engrams_url: `${config.baseUrl}/v1/engram.php?mod_id=${row.mod_id}`,
    spawncodes_url: `${config.baseUrl}/spawn?mod_id=${row.mod_id}`,
    pull_url: row.pull_url,
  };
}

function modIdsFrom(list: string[]): string[] {
  if (list.length === 0) throw badRequest('No mod id given');
  return list.map((item) => {
    const modId = parseModId(item);
    if (modId === undefined) throw badRequest(`"${item}" is not a workshop mod id`, { mod_id: item });
    return modId;
  });
}

/** A mod rule error (or a workshop outage) as the API error; any other error unchanged. */
function modRuleErrorToApiError(error: unknown): unknown {
  if (error instanceof ModRuleError) {
    return error.reason === 'notRegistered'
      ? notFound(error.message, { mod_id: error.modId })
      : badRequest(error.message, { mod_id: error.modId });
  }
  if (error instanceof WorkshopUnavailableError)
    return serviceUnavailable(`Mod ownership cannot be checked now: ${error.message}`);
  return error;
}

async function readWorkshop(config: Config, modId: string): Promise<WorkshopItem> {
  const item = await fetchWorkshopItem(config.workshopUrl, modId);
  if (!item) throw badRequest(`Mod ${modId} was not found on the workshop of this game`, { mod_id: modId });
  return item;
}

export async function modRoutes(v1: FastifyInstance): Promise<void> {
  const { config } = v1;
  const db = () => v1.database.db;
  v1.addHook('preHandler', requireSignature);

  v1.get('/mod.php', { schema: v1Docs.listMods }, async (request) =>
    (await listMods(db(), request.signedBy!)).map((row) => modStructure(config, row)),
  );

  v1.get<{ Params: { ids: string }; Querystring: { action?: string } }>(
    '/mod.php/:ids',
    { schema: v1Docs.getMods },
    async (request) => {
      const modIds = modIdsFrom(splitList(request.params.ids));
      const { action } = request.query;
      if (action !== undefined) {
        if (action !== 'confirm') throw badRequest(`Unknown action "${action}"; the only action is confirm`);
        if (modIds.length !== 1) throw badRequest('Confirm one mod at a time');
        return confirm(request, modIds[0]!);
      }
      const rows = await listMods(db(), request.signedBy!, modIds);
      if (rows.length === 0)
        throw notFound(
          modIds.length === 1 ? `You have not registered mod ${modIds[0]}` : 'None of these mods is registered by you',
        );
      const mods = rows.map((row) => modStructure(config, row));
      return modIds.length === 1 ? mods[0] : mods;
    },
  );

  async function confirm(request: FastifyRequest, modId: string) {
    const userId = request.signedBy!;
    const [registration] = await listMods(db(), userId, [modId]);
    if (!registration) throw notFound(`You have not registered mod ${modId}`, { mod_id: modId });
    if (registration.confirmed !== 1) {
      try {
        const page = await readWorkshop(config, modId);
        if (!page.description.toLowerCase().includes(registration.confirmation_code.toLowerCase())) {
          throw preconditionFailed(
            `The confirmation code ${registration.confirmation_code} is not in the description of the mod's workshop page yet`,
            {
              mod_id: modId,
              confirmation_code: registration.confirmation_code,
            },
          );
        }
        await confirmMod(db(), userId, modId);
      } catch (error) {
        throw modRuleErrorToApiError(error);
      }
    }
    const [row] = await listMods(db(), userId, [modId]);
    return modStructure(config, row!);
  }

  v1.post('/mod.php', { schema: v1Docs.registerMod }, async (request) => {
    const body = readJsonBody(request);
    const items = Array.isArray(body) ? body : [body];
    if (items.length === 0) throw badRequest('The array of mods is empty');
    if (items.length > MAX_MODS_PER_REQUEST) throw badRequest(`At most ${MAX_MODS_PER_REQUEST} mods per request`);
    const wanted = items.map((item, index) => parseRegistration(item, Array.isArray(body) ? index : undefined));
    const ids = wanted.map((mod) => mod.modId);
    const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
    if (repeated) throw badRequest(`Mod ${repeated} appears twice in the request`, { mod_id: repeated });

    // Cheap rule checks first, so a doomed request does not wait on the workshop.
    const mine = await listMods(db(), request.signedBy!, ids);
    if (mine[0]) throw badRequest(`You have already registered mod ${mine[0].mod_id}`, { mod_id: mine[0].mod_id });
    const [taken] = await confirmedByOthers(db(), request.signedBy!, ids);
    if (taken) throw badRequest(`Mod ${taken} is already confirmed by another user`, { mod_id: taken });

    let registrations: NewRegistration[];
    try {
      const pages = await Promise.all(wanted.map((mod) => readWorkshop(config, mod.modId)));
      registrations = wanted.map((mod, index) => ({ ...mod, name: pages[index]!.name }));
    } catch (error) {
      throw modRuleErrorToApiError(error);
    }
    const rows = await registerMods(db(), request.signedBy!, registrations).catch((error) => {
      throw modRuleErrorToApiError(error);
    });
    const mods = rows.map((row) => modStructure(config, row));
    return Array.isArray(body) ? mods : mods[0];
  });

  const remove = async (userId: string, modIds: string[]) => {
    await deleteMods(db(), userId, modIds).catch((error) => {
      throw modRuleErrorToApiError(error);
    });
    return { deleted: modIds };
  };
  v1.delete<{ Params: { ids: string } }>('/mod.php/:ids', { schema: v1Docs.deleteModsInPath }, (request) =>
    remove(request.signedBy!, modIdsFrom(splitList(request.params.ids))),
  );
  v1.delete('/mod.php', { schema: v1Docs.deleteMods }, (request) =>
    remove(request.signedBy!, modIdsFrom(readTextList(request))),
  );
}

function parseRegistration(item: unknown, index: number | undefined): Omit<NewRegistration, 'name'> {
  const where = index === undefined ? '' : ` (item ${index})`;
  if (typeof item !== 'object' || item === null || Array.isArray(item))
    throw badRequest(`Each mod must be an object with mod_id${where}`);
  const fields = item as Record<string, unknown>;
  const modId = parseModId(fields.mod_id);
  if (modId === undefined) throw badRequest(`${modIdProblem(fields.mod_id)}${where}`, { field: 'mod_id' });
  const pullUrl = fields.pull_url ?? null;
  if (pullUrl !== null && !isHttpUrl(pullUrl))
    throw badRequest(`pull_url must be an http(s) URL or null${where}`, { mod_id: modId });
  return { modId, pullUrl: pullUrl as string | null };
}

function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 2048) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
