import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/** Spans are made, sampled and exported, then dropped: the cost of warren and the SDK, not of a backend. */
const noopExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

/**
 * The tracing setup the observability benches measure (issue 17): every span sampled, exported through
 * the SDK's BatchSpanProcessor to an exporter that drops them, the AsyncLocalStorage context manager and
 * the provider registered globally, as a production setup would.
 */
export function noopTracerProvider(): BasicTracerProvider {
  const provider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor(noopExporter, { maxQueueSize: 65_536, maxExportBatchSize: 4096 }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  return provider;
}
