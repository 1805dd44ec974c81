import type { AccountEraser } from '../accounts/erasure.ts';
import { bumpContentVersion } from '../db/content-versions.ts';

/** legacy/'s part of erasing an account: what it published on v1 (mods with their engrams, documents). */
export const LEGACY_ERASER: AccountEraser = {
  feature: 'legacy',
  async erase(trx, userId) {
    const engrams = await trx.deleteFrom('engrams').where('user_id', '=', userId).executeTakeFirst();
    const mods = await trx.deleteFrom('mods').where('user_id', '=', userId).executeTakeFirst();
    await trx.deleteFrom('documents').where('user_id', '=', userId).execute();
    // The cached engram lists showed them: stale now on every instance.
    if (engrams.numDeletedRows > 0n || mods.numDeletedRows > 0n) await bumpContentVersion(trx, 'engrams');
  },
};
