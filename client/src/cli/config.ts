import { homedir } from 'node:os';
import { join } from 'node:path';

/** $XDG_CONFIG_HOME/content-service, else ~/.config/content-service. */
export function configDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith('/') ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'content-service');
}

export const tokensFile = (env?: NodeJS.ProcessEnv) => join(configDirectory(env), 'tokens.json');
