// The folder rules of docs/architecture.md#dependency-rules, checked in `npm run lint`
// (docs/decisions/0086). A rule's name is what a violation prints; its comment says why.
const feature = '^src/(accounts|oauth|rest|classes|legacy|web|mail|cli)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-feature-cycle',
      comment: 'Folders depend on each other in one direction only (rule 1).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { path: '^src/' }, pathNot: '^src/db/schema\\.ts$' },
    },
    {
      name: 'db-knows-no-feature',
      comment: 'The storage layer holds no feature knowledge and no HTTP (rule 2).',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: [feature, '^src/http/', '^src/app\\.ts$'] },
    },
    {
      name: 'http-knows-no-feature',
      comment: 'What http/ needs from a feature is passed in by app.ts (rule 3).',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: [feature, '^src/secrets/', '^src/app\\.ts$'] },
    },
    {
      name: 'secrets-only-db',
      comment: 'The secrets key and sealed values sit under every feature (rule 4).',
      severity: 'error',
      from: { path: '^src/secrets/' },
      to: { path: [feature, '^src/http/', '^src/app\\.ts$'] },
    },
    {
      name: 'mail-knows-no-feature',
      comment: 'Mail takes what to send; features call it (rule 5).',
      severity: 'error',
      from: { path: '^src/mail/' },
      to: { path: ['^src/(accounts|oauth|rest|classes|legacy|web|cli)/', '^src/app\\.ts$'] },
    },
    {
      name: 'accounts-does-not-import-oauth',
      comment: 'accounts/ declares what it needs from oauth/ (ending sessions); app.ts provides it (rule 6).',
      severity: 'error',
      from: { path: '^src/accounts/' },
      to: { path: '^src/oauth/' },
    },
    {
      name: 'pages-do-not-touch-db',
      comment: 'Pages parse forms and render; services read and write (rule 8).',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { path: '^src/db/', pathNot: '^src/db/schema\\.ts$' },
    },
    {
      name: 'rest-does-not-import-pages',
      comment: 'The REST engine and its classes know nothing of pages (rule 9).',
      severity: 'error',
      from: { path: '^src/(rest|classes)/' },
      to: { path: '^src/web/' },
    },
    {
      name: 'features-do-not-import-pages',
      comment: 'Pages sit on top: services never reach up into web/ (rules 1 and 8).',
      severity: 'error',
      from: { path: '^src/(accounts|oauth|rest|classes|legacy|mail|secrets|db|http)/' },
      to: { path: '^src/web/' },
    },
    {
      name: 'engine-knows-no-class',
      comment: 'The generic REST engine serves whatever classes it is given (rule 9).',
      severity: 'error',
      from: { path: '^src/rest/' },
      to: { path: '^src/classes/', pathNot: '^src/classes/schemas\\.ts$' },
    },
    {
      name: 'legacy-stands-apart',
      comment: 'v1 authenticates by signatures, never through OAuth or pages (rule 10).',
      severity: 'error',
      from: { path: '^src/legacy/' },
      to: { path: '^src/(oauth|web)/' },
    },
    {
      name: 'nothing-imports-entry-points',
      comment: 'The CLI and server.ts are entry points; only they wire the app (rule 11).',
      severity: 'error',
      from: { pathNot: '^src/(server\\.ts|cli/)' },
      to: { path: '^src/(server\\.ts|cli/|app\\.ts$)' },
    },
    {
      name: 'no-unresolvable',
      comment: 'An import that resolves to nothing is a typo or a missing dependency.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-undeclared-dependency',
      comment:
        'Production code imports only packages listed in dependencies. The two exceptions run only under tsx in development: the stylesheet and script bundler, and the worker-thread loader.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(web/assets\\.ts|db/tsx-worker\\.mjs)$' },
      to: { dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    skipAnalysisNotInRules: true,
  },
};
