import type { AccountEraser } from '../accounts/erasure.ts';

/** The v4 classes' part of erasing an account: the projects it published. */
export const CLASSES_ERASER: AccountEraser = {
  feature: 'classes',
  async erase(trx, userId) {
    await trx.deleteFrom('projects').where('user_id', '=', userId).execute();
  },
};
