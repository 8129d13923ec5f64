/**
 * /swagger's own colours over swagger-ui.css (src/http/openapi.ts puts this in the page in place of the plugin's dark
 * style): every text at least 4.5:1 against what it sits on (WCAG AA, held by test/http/swagger-ui.test.ts with axe),
 * in both schemes. The plugin's dark mode inverted the page with a CSS filter, which neither axe nor every reader
 * sees as it looks; this is a real dark theme.
 */
export const SWAGGER_THEME = `
/* The method badges: white on the method's colour, darkened from swagger-ui's (2:1 and less) to 5:1 or more. */
.swagger-ui .opblock.opblock-get .opblock-summary-method {
  background: #1a63b8;
}
.swagger-ui .opblock.opblock-post .opblock-summary-method {
  background: #1b7a4c;
}
.swagger-ui .opblock.opblock-put .opblock-summary-method {
  background: #9a5b00;
}
.swagger-ui .opblock.opblock-patch .opblock-summary-method {
  background: #0e7567;
}
.swagger-ui .opblock.opblock-delete .opblock-summary-method {
  background: #c62828;
}
.swagger-ui .opblock.opblock-head .opblock-summary-method,
.swagger-ui .opblock.opblock-options .opblock-summary-method {
  background: #5b616d;
}
/* The version badges beside the title (the API's version, OpenAPI's). */
.swagger-ui .info .title small {
  background: #5b616d;
}
.swagger-ui .info .title small.version-stamp {
  background: #3f6f00;
}
.swagger-ui .info a,
.swagger-ui .info .url,
.swagger-ui .markdown a {
  color: #1f5fae;
}
.swagger-ui .btn.authorize {
  color: #1b7a4c;
  border-color: #1b7a4c;
}
.swagger-ui .btn.authorize svg {
  fill: #1b7a4c;
}
.swagger-ui :is(.json-schema-2020-12-expand-deep-button, .parameter__in, .parameter__deprecated, .prop-format) {
  color: #555;
}

@media (prefers-color-scheme: dark) {
  html,
  body {
    background: #1b1c20;
    color: #e4e6eb;
    color-scheme: dark;
  }
  /*
   * swagger-ui.css names its dark text colour on each element; in this scheme every text is light, but the
   * highlighted code (its own dark background and colours) and what is re-coloured below.
   */
  .swagger-ui :not(.microlight, .microlight *, .highlight-code *, .opblock-summary-method, .info .title small, .info .title small *) {
    color: #e4e6eb !important;
  }
  .swagger-ui :is(.scheme-container, .opblock .opblock-section-header, .dialog-ux .modal-ux, .topbar) {
    background: #24262c !important;
  }
  .swagger-ui :is(input, select, textarea, .json-schema-2020-12-expand-deep-button) {
    background: #2b2d33 !important;
    border-color: #6b7079 !important;
  }
  .swagger-ui select {
    background-image: none !important;
  }
  /* Buttons the UI leaves unstyled would take the dark scheme's grey button face (#6b6b6b, 4.3:1 with the text). */
  .swagger-ui .json-schema-2020-12-accordion {
    background: transparent !important;
  }
  .swagger-ui :is(.info a, .info .url, .markdown a, .renderedMarkdown a, .info__license__url a) {
    color: #8ab4f8 !important;
  }
  .swagger-ui :is(.btn.authorize, .btn.authorize span) {
    color: #7ee2b8 !important;
    border-color: #7ee2b8 !important;
  }
  .swagger-ui .btn.authorize svg {
    fill: #7ee2b8;
  }
  .swagger-ui :is(.parameter__name.required span, .parameter__name.required::after, .errors-wrapper *) {
    color: #ff8a80 !important;
  }
  .swagger-ui :is(.prop-type, .json-schema-2020-12__attribute--primary) {
    color: #c9c9ff !important;
  }
  .swagger-ui svg:not(.btn.authorize svg) {
    fill: #e4e6eb;
  }
  .swagger-ui .opblock-tag {
    border-bottom-color: #4a4e57;
  }
}
`
