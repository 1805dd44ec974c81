/** RFC 6238's time step as the service uses it (src/accounts/totp.ts). */
export const TOTP_STEP_MS = 30_000;

/**
 * Waits for the next time step when this one ends within 10 s, so that the codes a test works out
 * now (say, the previous step's, accepted as clock drift) are still accepted when they arrive,
 * however slow the machine.
 */
export async function awayFromStepEdge(): Promise<void> {
  const left = TOTP_STEP_MS - (Date.now() % TOTP_STEP_MS);
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
}
