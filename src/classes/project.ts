import { defineClass } from '../rest/definition.ts';
import { integerProperty, textProperty, timestampProperty, uuidProperty } from '../rest/properties.ts';
import { ProjectProperties as schemas } from './schemas.ts';

/** A user's project. Only its owner sees it; to anyone else it does not exist. */
export const Project = defineClass({
  name: 'Project',
  path: '/projects',
  table: 'projects',
  id: { property: 'projectId', column: 'project_id' },
  properties: {
    userId: uuidProperty('user_id', { schema: schemas.userId }),
    title: textProperty('title', { writable: true, required: true, schema: schemas.title }),
    description: textProperty('description', { writable: true, default: () => '', schema: schemas.description }),
    gameId: textProperty('game_id', { writable: true, default: () => 'Ark', schema: schemas.gameId }),
    revision: integerProperty('revision', { schema: schemas.revision }),
    createdAt: timestampProperty('created_at', { schema: schemas.createdAt }),
    updatedAt: timestampProperty('updated_at', { schema: schemas.updatedAt }),
  },
  sortable: ['title', 'createdAt', 'updatedAt'],
  defaultSort: 'updatedAt',
  filters: { title: 'substring', gameId: 'exact' },
  visible: (eb, caller) => eb('user_id', '=', caller.userId),
  onCreate: (caller) => ({ user_id: caller.userId }),
  timestamps: { created: 'created_at', updated: 'updated_at' },
  revision: 'revision',
});
