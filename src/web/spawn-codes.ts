import type { FastifyInstance } from 'fastify';
import { badRequest } from '../http/errors.ts';
import { engramsOfMod } from '../legacy/engrams/lists.ts';
import { parseModId } from '../legacy/mods/mod-id.ts';
import { renderPage } from './render.ts';

/** The public spawn-code page a Mod's spawncodes_url points at. */
export async function spawnCodeRoutes(app: FastifyInstance): Promise<void> {
  app.get<{ Querystring: { mod_id?: string } }>('/spawn', async (request, reply) => {
    const modId = parseModId(request.query.mod_id);
    if (modId === undefined) throw badRequest('mod_id must be a workshop mod id');
    const engrams = await engramsOfMod(app.database.db, app.config, modId);
    const modName = engrams.find((engram) => engram.mod_name)?.mod_name;
    return reply
      .type('text/html; charset=utf-8')
      .send(renderPage('spawn-codes', { title: `Spawn codes: ${modName ?? `mod ${modId}`}`, engrams }));
  });
}
