import { defineConfig } from 'vitepress';

// The docs site: VitePress builds it offline (its theme, fonts and local search ship inside the npm
// package; nothing is fetched at build or view time). A broken internal link fails the build (VitePress's
// default; never set ignoreDeadLinks).
const guide = [
  {
    text: 'Start',
    items: [
      { text: 'Getting started', link: '/guide/getting-started' },
      { text: 'Why warren (and when not)', link: '/why-warren' },
      { text: 'Supported versions', link: '/reference/supported-versions' },
    ],
  },
  {
    text: 'Publishing',
    items: [
      { text: 'Publishing jobs', link: '/guide/publishing' },
      { text: 'Awaited results', link: '/guide/results' },
      { text: 'Delayed jobs', link: '/guide/delayed-jobs' },
      { text: 'Cancel, promote, reschedule', link: '/guide/job-control' },
      { text: 'Priorities', link: '/guide/priorities' },
      { text: 'Deduplicated publishing', link: '/guide/deduplication' },
      { text: 'Transactional outbox', link: '/guide/outbox' },
    ],
  },
  {
    text: 'Running jobs',
    items: [
      { text: 'Topology as code', link: '/guide/topology' },
      { text: 'Handlers: a function or a class', link: '/guide/handlers' },
      { text: 'Progress', link: '/guide/progress' },
      { text: 'Workers and concurrency', link: '/guide/workers' },
      { text: 'Retries', link: '/guide/retries' },
      { text: 'Job timeouts', link: '/guide/timeouts' },
      { text: 'Isolated processors', link: '/guide/isolated-processors' },
      { text: 'Batch consume and debounce', link: '/guide/batch-and-debounce' },
      { text: 'Dead letters', link: '/guide/dead-letters' },
      { text: 'Payload validation', link: '/guide/validation' },
      { text: 'Idempotency keys', link: '/guide/idempotency' },
      { text: 'Circuit breakers', link: '/guide/circuit-breakers' },
      { text: 'Rate limits', link: '/guide/rate-limits' },
      { text: 'Fair share across keys', link: '/guide/fair-share' },
      { text: 'Ordered partitions', link: '/guide/ordered-partitions' },
      { text: 'Per-key limits', link: '/guide/per-key-limits' },
      { text: 'Cron', link: '/guide/cron' },
      { text: 'Cron at run time', link: '/guide/schedule-registry' },
      { text: 'Workflows (routing slips)', link: '/guide/workflows' },
      { text: 'Events', link: '/guide/events' },
      { text: 'Queue aggregates (graphs)', link: '/guide/aggregates' },
    ],
  },
  {
    text: 'Process',
    items: [
      { text: 'Connections and TLS', link: '/guide/connections' },
      { text: 'Graceful shutdown', link: '/guide/shutdown' },
      { text: 'Logging', link: '/guide/logging' },
      { text: 'NestJS', link: '/guide/nestjs' },
      { text: 'Testing your handlers', link: '/guide/testing' },
    ],
  },
];

const operating = [
  {
    text: 'Operating',
    items: [
      { text: 'The warren command', link: '/operating/cli' },
      { text: 'Incidents', link: '/operating/incidents' },
      { text: 'The dashboard', link: '/operating/dashboard' },
      { text: 'The ops API', link: '/operating/ops-api' },
      { text: 'Upgrades', link: '/operating/upgrades' },
      { text: 'Removing a namespace', link: '/operating/removing-a-namespace' },
    ],
  },
];

const reference = [
  {
    text: 'Reference',
    items: [
      { text: 'Options and defaults', link: '/reference/options' },
      { text: 'Every option, from the code', link: '/reference/all-options' },
      { text: 'API (TypeDoc)', link: '/reference/api' },
      { text: 'Errors and codes', link: '/reference/errors' },
      { text: 'Wire format', link: '/reference/wire-format' },
      { text: 'What warren trusts', link: '/reference/trust' },
      { text: 'Guarantees', link: '/reference/guarantees' },
      { text: 'Metrics and traces', link: '/reference/metrics-and-traces' },
      { text: 'Supported versions', link: '/reference/supported-versions' },
      { text: 'Versioning and deprecation', link: '/versioning' },
      { text: 'Performance', link: '/performance' },
      { text: 'Changelog', link: '/changelog' },
    ],
  },
];

const recipes = [
  {
    text: 'Recipes',
    items: [
      { text: 'Sending emails', link: '/recipes/emails' },
      { text: 'Rendering PDFs', link: '/recipes/pdfs' },
      { text: 'Exports with progress', link: '/recipes/exports' },
      { text: 'A nightly cron job', link: '/recipes/nightly-cron' },
      { text: 'Order → stock → payment → shipping', link: '/recipes/checkout' },
    ],
  },
];

const contributing = [
  {
    text: 'Contributing',
    items: [
      { text: 'Development', link: '/contributing/development' },
      { text: 'Architecture', link: '/architecture' },
      { text: 'Style guide', link: '/contributing/style' },
      { text: 'Writing a docs page', link: '/contributing/docs' },
      { text: 'The partition suite', link: '/contributing/partitions' },
    ],
  },
];

export default defineConfig({
  title: 'warren',
  description: 'Background jobs for Node.js on RabbitMQ',
  cleanUrls: true,
  lastUpdated: false,
  srcExclude: ['**/README.md'],
  themeConfig: {
    nav: [
      { text: 'Guide', link: '/guide/getting-started' },
      { text: 'Recipes', link: '/recipes/emails' },
      { text: 'Operating', link: '/operating/cli' },
      { text: 'Reference', link: '/reference/options' },
      { text: 'Contributing', link: '/contributing/development' },
    ],
    sidebar: {
      '/guide/': guide,
      '/why-warren': guide,
      '/recipes/': recipes,
      '/operating/': operating,
      '/reference/': reference,
      '/versioning': reference,
      '/performance': reference,
      '/changelog': reference,
      '/contributing/': contributing,
      '/architecture': contributing,
    },
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
});
