/**
 * Worker thread of password-rules.ts: holds zxcvbn-ts with its common and English dictionaries and
 * scores the passwords it is sent. Building the dictionaries takes a few hundred milliseconds of
 * CPU and each check tens of milliseconds, which here never hold up the server's requests.
 */
import { parentPort } from 'node:worker_threads';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';
import * as en from '@zxcvbn-ts/language-en';

export interface StrengthRequest {
  id: number;
  password: string;
  userInputs: string[];
}

export interface StrengthAnswer {
  id: number;
  score: number;
  warning: string | null;
  suggestions: string[];
}

export function createScorer(): (password: string, userInputs: string[]) => Omit<StrengthAnswer, 'id'> {
  const zxcvbn = new ZxcvbnFactory({
    dictionary: { ...common.dictionary, ...en.dictionary },
    graphs: common.adjacencyGraphs,
    translations: en.translations,
  });
  return (password, userInputs) => {
    const result = zxcvbn.check(password, userInputs);
    return { score: result.score, warning: result.feedback.warning, suggestions: result.feedback.suggestions };
  };
}

if (parentPort) {
  const port = parentPort;
  const score = createScorer();
  port.on('message', (request: StrengthRequest) =>
    port.postMessage({ id: request.id, ...score(request.password, request.userInputs) } satisfies StrengthAnswer),
  );
}
