import type { Static } from 'typebox';
import type { ProjectProperties, SessionProperties, UserInputs, UserProperties } from '../../src/classes/schemas.ts';
import type { ContentServiceClient } from './client.ts';

type Shape<S> = { -readonly [K in keyof S]: S[K] extends import('typebox').TSchema ? Static<S[K]> : never };

/** A Project as the service shows it. */
export type Project = Shape<typeof ProjectProperties>;
/** What a write of a Project may give (a create needs `title`). */
export type ProjectWrite = Partial<Pick<Project, 'projectId' | 'title' | 'description' | 'gameId'>>;
export type ProjectCreate = ProjectWrite & Pick<Project, 'title'>;

export type Session = Shape<typeof SessionProperties>;

/** A User; `privateKey` only on your own, with the users.private_key:read scope. */
export type User = Omit<Shape<typeof UserProperties>, 'privateKey'> &
  Partial<Pick<Shape<typeof UserProperties>, 'privateKey'>>;
export type UserWrite = Partial<Shape<typeof UserInputs>>;

/** The v4 list envelope. */
export interface ListPage<T> {
  totalResults: number;
  pageSize: number;
  pages: number;
  page: number;
  results: T[];
}

export interface ListQuery {
  /** 1–250; default 250. */
  pageSize?: number;
  /** The first page to read (1-based); default 1. */
  page?: number;
  sortedColumn?: string;
  sortDirection?: 'ascending' | 'descending';
  /** Filters of the class (e.g. `title` for projects). */
  [filter: string]: string | number | undefined;
}

export interface WriteResult<T> {
  created: T[];
  updated: T[];
}

/**
 * A v4 class: list (an async iterator that reads the next page only when the previous one is
 * used up), get, create-or-update (one object or an array), replace (PUT), patch, delete one,
 * delete many (all or nothing).
 */
export class Resource<T, W, C = W> {
  constructor(
    private readonly client: ContentServiceClient,
    readonly path: string,
    readonly idProperty: string,
  ) {}

  /** Every instance matching `query`, fetched page by page as you iterate. */
  async *list(query: ListQuery = {}): AsyncGenerator<T, void, undefined> {
    let page = query.page ?? 1;
    for (;;) {
      const envelope = await this.listPage({ ...query, page });
      yield* envelope.results;
      if (envelope.results.length === 0 || page >= envelope.pages) return;
      page++;
    }
  }

  /** One page of the list, with its totals. */
  listPage(query: ListQuery = {}): Promise<ListPage<T>> {
    return this.client.request('GET', this.path, { query });
  }

  get(id: string): Promise<T> {
    return this.client.request('GET', `${this.path}/${encodeURIComponent(id)}`);
  }

  /** Creates or updates (by id) one instance or many, in one request. */
  save(objects: W | C | Array<W | C>): Promise<WriteResult<T>> {
    return this.client.request('POST', this.path, { body: objects });
  }

  /** Creates one instance and answers it. */
  async create(object: C): Promise<T> {
    const result = await this.save(object);
    return result.created[0] ?? result.updated[0]!;
  }

  /** Replaces (or creates) the instance with this id; omitted writable properties go back to their defaults. */
  replace(id: string, object: C): Promise<T> {
    return this.client.request('PUT', `${this.path}/${encodeURIComponent(id)}`, { body: object });
  }

  /** Changes the given properties of an existing instance. */
  patch(id: string, changes: W): Promise<T> {
    return this.client.request('PATCH', `${this.path}/${encodeURIComponent(id)}`, { body: changes });
  }

  delete(id: string): Promise<void> {
    return this.client.request('DELETE', `${this.path}/${encodeURIComponent(id)}`);
  }

  /** Deletes every instance named, or none of them (the request fails). */
  deleteMany(ids: string[]): Promise<void> {
    return this.client.request('DELETE', this.path, { body: ids.map((id) => ({ [this.idProperty]: id })) });
  }
}

export const projectsApi = (client: ContentServiceClient) =>
  new Resource<Project, ProjectWrite, ProjectCreate>(client, '/v4/projects', 'projectId');

export const sessionsApi = (client: ContentServiceClient) => {
  const resource = new Resource<Session, never>(client, '/v4/sessions', 'sessionId');
  return {
    list: resource.list.bind(resource),
    listPage: resource.listPage.bind(resource),
    get: resource.get.bind(resource),
    delete: resource.delete.bind(resource),
    deleteMany: resource.deleteMany.bind(resource),
    /** The session of the token in use. */
    current: (): Promise<Session> => client.request('GET', '/v4/session'),
  };
};

export const usersApi = (client: ContentServiceClient) => {
  const resource = new Resource<User, UserWrite, UserWrite & Pick<Shape<typeof UserInputs>, 'username'>>(
    client,
    '/v4/users',
    'userId',
  );
  return {
    list: resource.list.bind(resource),
    listPage: resource.listPage.bind(resource),
    get: resource.get.bind(resource),
    save: resource.save.bind(resource),
    replace: resource.replace.bind(resource),
    patch: resource.patch.bind(resource),
  };
};

export const userApi = (client: ContentServiceClient) => ({
  /** The signed-in user (GET /v4/user). */
  get: (): Promise<User> => client.request('GET', '/v4/user'),
  replace: (user: UserWrite & Pick<Shape<typeof UserInputs>, 'username'>): Promise<User> =>
    client.request('PUT', '/v4/user', { body: user }),
  patch: (changes: UserWrite): Promise<User> => client.request('PATCH', '/v4/user', { body: changes }),
});
