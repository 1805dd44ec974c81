import type { ClassDefinition } from '../rest/definition.ts';
import { Project } from './project.ts';
import { Session } from './session.ts';
import { User } from './user.ts';

/** Every v4 class the engine serves. */
export const classes: readonly ClassDefinition[] = [Project, Session, User];
