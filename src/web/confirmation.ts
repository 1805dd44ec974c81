import type { FastifyReply } from 'fastify';
import { field, type NextStep, sendPage } from './pages.ts';

/**
 * Confirmation pages of destructive actions, without JavaScript: the action's form (DESIGN's
 * button `name` and `value`) first answers this page, whose button posts the same form again to
 * the same route with `confirmed=yes` (and a single-use submit token); only that one acts.
 */

export const CONFIRMED_FIELD = 'confirmed';

/** Whether the form is the confirmation page's (hidden `confirmed=yes`). */
export const isConfirmed = (body: unknown): boolean => field(body, CONFIRMED_FIELD) === 'yes';

export interface Confirmation {
  title: string;
  /** What happens, and what cannot be undone. */
  consequence: string;
  /** The route the action's form posts to, and its button's DESIGN name and value. */
  action: string;
  name: string;
  value: string;
  button: string;
  cancel: NextStep;
}

export function sendConfirmation(reply: FastifyReply, confirmation: Confirmation): FastifyReply {
  return sendPage(reply, 'confirm', { confirmation });
}
