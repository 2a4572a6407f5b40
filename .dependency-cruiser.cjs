// Layer rules for src/ (see docs/architecture.md). The layers, outermost first:
//   cli → faces → core → agents → codex → lib
// A module may import its own layer and any layer to its right, never one to its left. The three faces (hub,
// provider, attach) are siblings that never import each other; code they share sits directly in src/faces/.
// Type-only imports count: `tsPreCompilationDeps` keeps them in the graph, so a cycle made only of types is reported.

/** Paths of every layer to the left of (outside) the named one. */
const outside = {
  faces: '^src/cli/',
  core: '^src/(cli|faces)/',
  agents: '^src/(cli|faces|core)/',
  codex: '^src/(cli|faces|core|agents)/',
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'A cycle (type-only ones included) makes the layers meaningless and the load order fragile.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...Object.entries(outside).map(([layer, path]) => ({
      name: `${layer}-imports-only-inner-layers`,
      comment: `src/${layer}/ may import only the layers to its right (cli → faces → core → agents → codex → lib).`,
      severity: 'error',
      from: { path: `^src/${layer}/` },
      to: { path },
    })),
    {
      name: 'lib-imports-nothing-from-src',
      comment: 'src/lib/ is the innermost layer: small helpers with no knowledge of the rest of baton.',
      severity: 'error',
      from: { path: '^src/(lib/|version\\.ts$)' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'faces-stay-apart',
      comment: 'hub, provider and attach never import each other; shared face code lives in src/faces/*.ts.',
      severity: 'error',
      from: { path: '^src/faces/([^/]+)/' },
      to: { path: '^src/faces/[^/]+/', pathNot: '^src/faces/$1/' },
    },
    {
      name: 'generated-only-from-codex-or-agents',
      comment: "The generated Codex protocol types are read through src/codex/ (and the agents' Codex adapter) only.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(codex|agents|generated)/' },
      to: { path: '^src/generated/' },
    },
    {
      name: 'src-stands-alone',
      comment: 'The product never reaches into tests, benches or scripts.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'no-dev-deps-at-run-time',
      comment: 'A devDependency is absent from an installed package; src/ may use one for types only.',
      severity: 'error',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'resolvable',
      comment: 'Every import resolves to a file or an installed package.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
