import type { ClassDefinition } from '../rest/definition.ts';
import { integerProperty, textProperty, timestampProperty, uuidProperty } from '../rest/properties.ts';

/** A user's project. Only its owner sees it; to anyone else it does not exist. */
export const Project: ClassDefinition = {
  name: 'Project',
  path: '/projects',
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  properties: {
    userId: uuidProperty('user_id'),
    title: textProperty('title', { writable: true, required: true, minLength: 1, maxLength: 200 }),
    description: textProperty('description', { writable: true, default: () => '', maxLength: 10_000 }),
    gameId: textProperty('game_id', { writable: true, default: () => 'Ark', minLength: 1, maxLength: 50 }),
    revision: integerProperty('revision'),
    createdAt: timestampProperty('created_at'),
    updatedAt: timestampProperty('updated_at'),
  },
  sortable: ['title', 'createdAt', 'updatedAt'],
  defaultSort: 'updatedAt',
  filters: { title: 'substring', gameId: 'exact' },
  visible: (eb, caller) => eb('user_id', '=', caller.userId),
  onCreate: (caller) => ({ user_id: caller.userId }),
  timestamps: { created: 'created_at', updated: 'updated_at' },
  revision: 'revision',
};
