import closeWithGrace from 'close-with-grace';
import pino from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  // Asynchronous writes coalesce log lines under load instead of one write() per line; pino
  // flushes what is pending when the process exits.
  const logStream = pino.destination({ dest: 1, sync: false });
  const app = await buildApp({ config, logStream });
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });
  await app.listen({ port: config.port, host: config.host });
}

main().catch((error) => {
  process.stderr.write(`failed to start: ${(error as Error).message}\n`);
  process.exit(1);
});
