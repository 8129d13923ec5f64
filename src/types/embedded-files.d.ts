// Files imported `with { type: 'file' }`: the default export is a path, to the installed file when run from the
// sources, to the copy embedded in the executable in the single binary (scripts/build-binary.ts).

declare module 'swagger-ui-dist/swagger-ui-bundle.js' {
  const path: string
  export default path
}

declare module 'swagger-ui-dist/swagger-ui.css' {
  const path: string
  export default path
}

declare module '*.wasm' {
  const path: string
  export default path
}
