import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireScopes } from '../http/bearer-auth.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { errorResponses } from '../http/openapi-schemas.ts';
import { textBody } from '../http/text-body.ts';
import { isUuid } from '../http/uuid.ts';
import type { AliasDefinition, ClassDefinition, Row } from './definition.ts';
import {
  bulkDeleteSchema,
  idParamsSchema,
  instanceSchema,
  listQuerySchema,
  listSchema,
  MAX_PAGE_SIZE,
  postSchema,
  writeResultSchema,
  writeSchema,
} from './schemas.ts';
import { ClassStore } from './store.ts';

type IdRequest = FastifyRequest<{ Params: { id: string }; Body: Row }>;

/**
 * Sends JSON text written by the class's instance writer (see json-writer.ts): what the route's
 * response schema would make of the answer, so its serializer is not run again (a string when
 * short, one Buffer when long: see textBody).
 */
function sendJson(reply: FastifyReply, text: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(textBody(text));
}

/** Serves every operation of the spec's table for one declared class, under the v4 API scope. */
export function classRoutes(definition: ClassDefinition) {
  return async function routes(api: FastifyInstance): Promise<void> {
    const store = new ClassStore(definition, api.database);
    const readScopes = definition.scopes?.read ?? [];
    const read = requireScopes(...readScopes);
    const write = requireScopes(...new Set([...readScopes, ...(definition.scopes?.write ?? [])]));
    const operations = { create: true, update: true, delete: true, ...definition.operations };
    const tags = [definition.name];
    const security = [{ bearer: [] }];
    const instance = instanceSchema(definition);
    const { path } = definition;
    const noun = definition.name.toLowerCase();
    const name = definition.name;
    const errors = {
      400: 'Invalid input: unknown or malformed properties, parameters out of range',
      401: 'No access token, or an invalid or expired one',
      403: 'The token lacks a scope this operation needs, or the instance is not yours to change',
      404: 'No such instance (or not yours to see)',
      429: 'Rate limit exceeded',
    } as const;
    const answers = (...statuses: Array<keyof typeof errors>) =>
      errorResponses(Object.fromEntries(statuses.map((status) => [status, errors[status]])));

    const pathId = (request: IdRequest, forWrite = false): string => {
      if (isUuid(request.params.id)) return request.params.id;
      if (forWrite) throw badRequest(`${request.params.id} is not a valid ${definition.id.property} (a UUID)`);
      throw notFound(`No ${noun} ${request.params.id}`);
    };
    const json = (request: FastifyRequest, row: Row) => store.toJson(row, request.auth);

    api.get(path, {
      preHandler: read,
      schema: {
        tags,
        security,
        operationId: `list${name}s`,
        summary: `List ${noun} instances`,
        querystring: listQuerySchema(definition),
        response: { 200: listSchema(definition), ...answers(400, 401, 403, 429) },
      },
      handler: async (request, reply) => {
        const {
          pageSize = MAX_PAGE_SIZE,
          page = 1,
          sortDirection = 'ascending',
          sortedColumn = definition.defaultSort,
          ...filters
          // biome-ignore lint/suspicious/noExplicitAny: the query string was validated against the class's schema
        } = request.query as Record<string, any>;
        const { total, rows } = await store.list(request.auth, {
          pageSize,
          page,
          sortDirection,
          sortedColumn,
          filters,
        });
        const results = rows.map((values) => store.valuesToJsonText(values, request.auth));
        return sendJson(
          reply,
          `{"totalResults":${total},"pageSize":${pageSize},"pages":${Math.ceil(total / pageSize)},"page":${page},"results":[${results.join(',')}]}`,
        );
      },
    });

    const getOne = async (request: IdRequest, reply: FastifyReply, id: string) => {
      const text = await store.getJsonText(request.auth, id);
      if (text === undefined) throw notFound(`No ${noun} ${id}`);
      return sendJson(reply, text);
    };
    const replace = async (request: IdRequest, reply: FastifyReply, id: string) => {
      const { created, row } = await store.replace(request, id, request.body);
      return reply.code(created ? 201 : 200).send(json(request, row));
    };
    const patch = async (request: IdRequest, id: string) => json(request, await store.patch(request, id, request.body));
    const remove = async (request: IdRequest, reply: FastifyReply, id: string) => {
      await store.remove(request, [id]);
      return reply.code(204).send();
    };

    const idRoute = { params: idParamsSchema, tags, security };
    api.get<{ Params: { id: string } }>(`${path}/:id`, {
      preHandler: read,
      schema: {
        ...idRoute,
        operationId: `get${name}`,
        summary: `Get one ${noun}`,
        response: { 200: instance, ...answers(401, 403, 404, 429) },
      },
      handler: (request, reply) => getOne(request as IdRequest, reply, pathId(request as IdRequest)),
    });

    if (operations.create || operations.update) {
      api.post(path, {
        preHandler: write,
        schema: {
          tags,
          security,
          operationId: `save${name}s`,
          summary: `Create or update ${noun} instances (one object or an array)`,
          body: postSchema(definition),
          response: { 200: writeResultSchema(definition), ...answers(400, 401, 403, 404, 429) },
        },
        handler: async (request, reply) => {
          const items = (Array.isArray(request.body) ? request.body : [request.body]) as Row[];
          const { created, updated } = await store.save(request, items);
          const text = (rows: Row[]) => rows.map((row) => store.toJsonText(row, request.auth)).join(',');
          return sendJson(reply, `{"created":[${text(created)}],"updated":[${text(updated)}]}`);
        },
      });
      api.put<{ Params: { id: string }; Body: Row }>(`${path}/:id`, {
        preHandler: write,
        schema: {
          ...idRoute,
          operationId: `replace${name}`,
          summary: `Replace a ${noun}, or create it with this id`,
          body: writeSchema(definition, true),
          response: { 200: instance, 201: instance, ...answers(400, 401, 403, 404, 429) },
        },
        handler: (request, reply) => replace(request, reply, pathId(request, true)),
      });
    }
    if (operations.update) {
      api.patch<{ Params: { id: string }; Body: Row }>(`${path}/:id`, {
        preHandler: write,
        schema: {
          ...idRoute,
          operationId: `update${name}`,
          summary: `Change some properties of a ${noun}`,
          body: writeSchema(definition, false),
          response: { 200: instance, ...answers(400, 401, 403, 404, 429) },
        },
        handler: (request) => patch(request, pathId(request)),
      });
    }
    if (operations.delete) {
      api.delete<{ Params: { id: string } }>(`${path}/:id`, {
        preHandler: write,
        schema: {
          ...idRoute,
          operationId: `delete${name}`,
          summary: `Delete a ${noun}`,
          response: { 204: { type: 'null', description: 'Deleted' }, ...answers(401, 403, 404, 429) },
        },
        handler: (request, reply) => remove(request as IdRequest, reply, pathId(request as IdRequest)),
      });
      api.delete(path, {
        preHandler: write,
        schema: {
          tags,
          security,
          operationId: `delete${name}s`,
          summary: `Delete several ${noun} instances, all or nothing`,
          body: bulkDeleteSchema(definition),
          response: { 204: { type: 'null', description: 'All deleted' }, ...answers(400, 401, 403, 404, 429) },
        },
        handler: async (request, reply) => {
          const ids = (request.body as Row[]).map((item) => item[definition.id.property] as string);
          await store.remove(request, ids);
          return reply.code(204).send();
        },
      });
    }

    for (const alias of definition.aliases ?? []) registerAlias(alias);

    function registerAlias(alias: AliasDefinition): void {
      const schema = { tags, security };
      const id = (request: FastifyRequest) => alias.id(request.auth);
      for (const method of alias.methods) {
        if (method === 'GET')
          api.get(
            alias.path,
            {
              preHandler: read,
              schema: {
                ...schema,
                operationId: `getCurrent${name}`,
                summary: `Get your ${noun}`,
                response: { 200: instance, ...answers(401, 403, 429) },
              },
            },
            (request, reply) => getOne(request as IdRequest, reply, id(request)),
          );
        if (method === 'PUT')
          api.put(
            alias.path,
            {
              preHandler: write,
              schema: {
                ...schema,
                operationId: `replaceCurrent${name}`,
                summary: `Replace your ${noun}`,
                body: writeSchema(definition, true),
                response: { 200: instance, ...answers(400, 401, 403, 429) },
              },
            },
            (request, reply) => replace(request as IdRequest, reply, id(request)),
          );
        if (method === 'PATCH')
          api.patch(
            alias.path,
            {
              preHandler: write,
              schema: {
                ...schema,
                operationId: `updateCurrent${name}`,
                summary: `Change your ${noun}`,
                body: writeSchema(definition, false),
                response: { 200: instance, ...answers(400, 401, 403, 429) },
              },
            },
            (request) => patch(request as IdRequest, id(request)),
          );
        if (method === 'DELETE')
          api.delete(
            alias.path,
            {
              preHandler: requireScopes(),
              schema: {
                ...schema,
                operationId: `deleteCurrent${name}`,
                summary: `End your ${noun}`,
                response: { 204: { type: 'null', description: 'Deleted' }, ...answers(401, 429) },
              },
            },
            (request, reply) => remove(request as IdRequest, reply, id(request)),
          );
      }
    }
  };
}

/** Registers every class in the v4 API scope. */
export async function registerClasses(api: FastifyInstance, classes: readonly ClassDefinition[]): Promise<void> {
  for (const definition of classes) await api.register(classRoutes(definition));
}
