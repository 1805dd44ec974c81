import type { FastifyInstance } from 'fastify';
import { badRequest } from '../http/errors.ts';
import { engramStructure } from '../legacy/engrams/routes.ts';
import { streamEngrams } from '../legacy/engrams/store.ts';
import { parseModId } from '../legacy/mods/routes.ts';
import { renderPage } from './render.ts';

/** The public spawn-code page a Mod's spawncodes_url points at. */
export async function spawnCodeRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Querystring: { mod_id?: string } }>('/spawn', async (request, reply) => {
    const modId = parseModId(request.query.mod_id);
    if (modId === undefined) throw badRequest('mod_id must be a workshop mod id');
    const engrams = [];
    for await (const rows of streamEngrams(app.database.db, [modId])) engrams.push(...rows.map((row) => engramStructure(app.config, row)));
    engrams.sort((a, b) => a.label.localeCompare(b.label));
    const modName = engrams.find((engram) => engram.mod_name)?.mod_name;
    return reply.type('text/html; charset=utf-8').send(renderPage('spawn-codes', { title: `Spawn codes: ${modName ?? `mod ${modId}`}`, engrams }));
  });
}
