import autocannon from 'autocannon';

export interface Load {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** A different request each time (single-use codes and tokens, fresh ids). */
  next?: () => { path?: string; headers?: Record<string, string>; body?: string };
}

export interface Figures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Answers outside 2xx, and connection errors or timeouts: a case with any of these is flagged. */
  failed: number;
  requests: number;
}

export async function measure(baseUrl: string, load: Load, options: { seconds: number; connections: number }): Promise<Figures> {
  const { next } = load;
  const result = await autocannon({
    url: baseUrl,
    connections: options.connections,
    duration: options.seconds,
    requests: [
      {
        method: (load.method ?? 'GET') as autocannon.Request['method'],
        path: load.path,
        headers: load.headers,
        body: load.body,
        ...(next ? { setupRequest: (request: autocannon.Request) => ({ ...request, ...next() }) } : {}),
      },
    ],
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
    requests: result.requests.total,
  };
}
